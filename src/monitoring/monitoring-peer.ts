// Monitoring's part of the peer protocol: a MonitoringRead asks a node for its details of
// one service; the default view asks every other member that is not Left.

import type { ClusterCore } from '../cluster-core/core.js';
import { NotFoundError } from '../lib/errors.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import { readDocument, writeDocument } from '../peer/documents.js';
import { optionalStr, str } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import { jsonObject } from '../lib/validation.js';
import { checkFilter, checkService, localDetails, type MonitoringDeps, type MonitoringFilter, type MonitoringService, type NodeDetails } from './monitoring.js';

/** MonitoringRead: the service and filter are checked by the monitoring module that answers. */
export interface MonitoringRead {
  service: string;
  tenant: string;
  uri: string | undefined;
}

const detailsSchema = jsonObject('monitoring details');

export const MONITORING_READ = definePeerKind<MonitoringRead, NodeDetails>({
  name: 'MonitoringRead',
  request: {
    toProto: (value) => ({ ...value }),
    fromProto: (object) => ({ service: str(object, 'service'), tenant: str(object, 'tenant'), uri: optionalStr(object, 'uri') }),
  },
  reply: {
    type: 'MonitoringReply',
    codec: {
      toProto: (value) => ({ node: value.node, detailsJson: writeDocument(value.details) }),
      fromProto: (object) => ({ node: str(object, 'node'), details: readDocument('detailsJson', str(object, 'detailsJson'), detailsSchema) }),
    },
  },
});

/** Answers other nodes' MonitoringReads, checking service and filter as a route does. */
export function serveMonitoring(endpoint: PeerEndpoint, deps: MonitoringDeps): void {
  endpoint.handle(MONITORING_READ, (_sender, read) => {
    const service = checkService(read.service);
    return localDetails(service, deps, checkFilter(service, read.tenant, read.uri));
  });
}

/** Monitoring details from one named peer, or from every other member that is not Left. */
export async function remoteDetails(
  endpoint: PeerEndpoint,
  core: Pick<ClusterCore, 'membership'>,
  service: MonitoringService,
  filter: MonitoringFilter,
  node: string | undefined,
  deadlineMs: number,
): Promise<NodeDetails[]> {
  const members = core.membership().members.filter((member) => member.state !== 'Left' && member.name !== endpoint.name);
  if (node !== undefined && !members.some((member) => member.name === node)) throw new NotFoundError(`node '${node}' is not in the cluster`);
  const asked = node === undefined ? members.map((member) => member.name) : [node];
  return Promise.all(
    asked.map(async (name) => {
      try {
        return await endpoint.call(name, MONITORING_READ, { service, tenant: filter.tenant, uri: filter.uri }, { deadlineMs });
      } catch (error) {
        return { node: name, details: { error: `unreachable: ${(error as Error).message}` } };
      }
    }),
  );
}
