// The address other nodes reach this one at. Listening on every interface (0.0.0.0 or ::,
// as in a container) tells peers nothing they can dial, so unless advertiseAddress is set
// the node advertises its first external IPv4 address (a container's address on its
// network), else the loopback address.

import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';

const WILDCARDS = new Set(['0.0.0.0', '::', '[::]', '']);

export function advertisedAddress(
  host: string,
  configured: string | null,
  interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces(),
): string | null {
  if (configured !== null) return configured;
  if (!WILDCARDS.has(host)) return null;
  const external = Object.values(interfaces)
    .flatMap((entries) => entries ?? [])
    .find((entry) => entry.family === 'IPv4' && !entry.internal);
  return external?.address ?? '127.0.0.1';
}
