// Monitoring details from the other members (spec, "Monitoring": the global view, or
// `node=<name>`). A member that does not answer shows why instead of failing the request.

import { NotFoundError } from '../errors.js';
import type { MonitoringFilter, MonitoringService, NodeDetails } from './monitoring.js';

export interface RemoteMonitoring {
  /** The members other than this node that are not Left. */
  others(): string[];
  ask(node: string, service: MonitoringService, filter: MonitoringFilter): Promise<NodeDetails>;
}

/** Details from one named peer, or from every other member that is not Left. */
export function remoteDetails(remote: RemoteMonitoring, service: MonitoringService, filter: MonitoringFilter, node: string | undefined): Promise<NodeDetails[]> {
  const members = remote.others();
  if (node !== undefined && !members.includes(node)) throw new NotFoundError(`node '${node}' is not in the cluster`);
  const asked = node === undefined ? members : [node];
  return Promise.all(
    asked.map(async (name) => {
      try {
        return await remote.ask(name, service, filter);
      } catch (error) {
        return { node: name, details: { error: `unreachable: ${(error as Error).message}` } };
      }
    }),
  );
}
