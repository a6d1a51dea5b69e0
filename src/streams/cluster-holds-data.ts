// Whether any member stores payloads of a stream (issue 13 item 3g: a repository mapping or
// ring size may change only while no member does).

export interface HoldsDataPeers {
  localHoldsData(stream: string): Promise<boolean>;
  /** The members other than this node that are not Left. */
  others(): string[];
  askPeer(node: string, stream: string): Promise<boolean>;
}

/**
 * True when this node or any other member stores payloads of the stream. A member that
 * does not answer counts as holding some: a change that would hide stored data is refused
 * rather than risked.
 */
export async function clusterHoldsData(stream: string, peers: HoldsDataPeers): Promise<boolean> {
  if (await peers.localHoldsData(stream)) return true;
  const answers = await Promise.all(peers.others().map((node) => peers.askPeer(node, stream).catch(() => true)));
  return answers.some((holds) => holds);
}
