// Whom a node takes calls from, by the node table: members, and a Left member only
// for its table messages and the hints it still holds (a leaver whose hand-off was waived).

import { describe, expect, it } from 'vitest';
import { NodeTable, type NodeDocument } from '../../src/cluster/node-table.js';
import { nodeTableDirectory } from '../../src/cluster/peer-server.js';
import { ADMIN_COMMAND, CORE_MESSAGE } from '../../src/cluster/core-messages.js';
import { WRITE_RECORDS } from '../../src/cluster/write-messages.js';
import { DEFINITION_PUSH, DEFINITION_WRITE } from '../../src/replicated-definitions/definition-messages.js';
import { REPAIR_SWEEP } from '../../src/repair/repair-messages.js';

function document(name: string, state: NodeDocument['state']): NodeDocument {
  const version = { number: '0.1.0', revision: 'test' };
  return { name, zone: 'z', publicKey: Buffer.alloc(32, name.length).toString('base64'), address: '127.0.0.1', port: 1, httpPort: 2, version, state, available: 'true' };
}

describe('peer directory - whom a node takes calls from', () => {
  const nodes = new NodeTable('n1');
  nodes.replaceAll([document('n1', 'Joined'), document('n2', 'Joined'), document('left-n3', 'Left')]);
  const directory = nodeTableDirectory(nodes);

  it('takes every call from a member', () => {
    expect(directory.acceptsRequestsFrom!('n2', REPAIR_SWEEP.name)).toBe(true);
    expect(directory.acceptsRequestsFrom!('n2', WRITE_RECORDS.name)).toBe(true);
  });

  it('takes from a Left node its table messages and its hints only', () => {
    expect(directory.acceptsRequestsFrom!('left-n3', CORE_MESSAGE.name)).toBe(true);
    expect(directory.acceptsRequestsFrom!('left-n3', WRITE_RECORDS.name)).toBe(true);
    expect(directory.acceptsRequestsFrom!('left-n3', DEFINITION_PUSH.name)).toBe(true);
    expect(directory.acceptsRequestsFrom!('left-n3', REPAIR_SWEEP.name)).toBe(false);
    expect(directory.acceptsRequestsFrom!('left-n3', ADMIN_COMMAND.name)).toBe(false);
    expect(directory.acceptsRequestsFrom!('left-n3', DEFINITION_WRITE.name)).toBe(false);
  });
});
