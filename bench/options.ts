// The options every benchmark takes, parsed once by bench/run.ts.

export interface BenchOptions {
  /** Payloads written per measured run. */
  payloads: number;
  /** Payloads per request (and per raw LevelDB batch). */
  batch: number;
  /** Requests (or raw batches) in flight at once; 1 is strictly sequential. */
  concurrency: number;
  /** A second, concurrent run to report beside the headline one; 0 skips it. */
  extraConcurrency: number;
  /** Measured runs of each query (search). */
  runs: number;
  /** The most nodes a cluster is grown to (scale). */
  nodes: number;
}
