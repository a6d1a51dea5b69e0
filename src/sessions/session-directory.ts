// What every node needs to know about every session, whoever hosts it: which session an
// output belongs to (to serve `/output/<tenant>/<id>` anywhere) and which streams running
// live queries read (to forward accepted payloads to their hosts). Built from the session
// documents, which every node holds, and rebuilt when one changes.

import { parseQuery } from '../query/index.js';
import type { Definitions } from '../storage/definition-store.js';
import { parseStreamUri, streamKey } from '../streams/stream-id.js';
import type { StoredSession } from './session-model.js';

interface Index {
  /** outputId → the session's tenant and id. */
  readonly outputs: Map<string, { tenant: string; sessionId: string }>;
  /** stream key → ids of sessions with a running live query reading it. */
  readonly liveReaders: Map<string, Set<string>>;
}

export class SessionDirectory {
  private index: Index | undefined;

  constructor(
    private readonly definitions: Definitions,
    private readonly hostOf: (sessionId: string) => string | undefined,
    private readonly localName: string,
  ) {
    definitions.onChange((key) => {
      if (key.startsWith('session/')) this.index = undefined;
    });
  }

  outputExists(tenant: string, outputId: string): boolean {
    return this.current().outputs.get(outputId)?.tenant === tenant;
  }

  /** Whether a query of any session has this output. */
  hasOutput(outputId: string): boolean {
    return this.current().outputs.has(outputId);
  }

  hostOfOutput(outputId: string): string | undefined {
    const session = this.current().outputs.get(outputId);
    return session === undefined ? undefined : this.hostOf(session.sessionId);
  }

  /** Other nodes hosting a running live query that reads `stream`. */
  remoteHostsReading(stream: string): string[] {
    const sessions = this.current().liveReaders.get(stream);
    if (sessions === undefined) return [];
    const hosts = new Set<string>();
    for (const id of sessions) {
      const host = this.hostOf(id);
      if (host !== undefined && host !== this.localName) hosts.add(host);
    }
    return [...hosts];
  }

  private current(): Index {
    return (this.index ??= this.build());
  }

  private build(): Index {
    const outputs = new Map<string, { tenant: string; sessionId: string }>();
    const liveReaders = new Map<string, Set<string>>();
    for (const { value: session } of this.definitions.list<StoredSession>('session/')) {
      for (const query of session.queries) {
        outputs.set(query.outputId, { tenant: session.tenant, sessionId: session.id });
        if (query.desired !== 'running') continue;
        const stream = liveSource(query.body);
        if (stream === undefined) continue;
        let set = liveReaders.get(stream);
        if (set === undefined) liveReaders.set(stream, (set = new Set()));
        set.add(session.id);
      }
    }
    return { outputs, liveReaders };
  }
}

/** The stream key a live query reads; undefined for historical or logical sources. */
function liveSource(body: string): string | undefined {
  try {
    const ast = parseQuery(body);
    return !ast.historical && ast.source.kind === 'physical' ? streamKey(parseStreamUri(ast.source.uri)) : undefined;
  } catch {
    return undefined;
  }
}
