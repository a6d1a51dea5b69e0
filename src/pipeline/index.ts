// The query operator runtime: pure operators that run a checked query's steps
// over rows and give output changes. The execution sessions feed it and serve its output.

export { createPipeline } from './pipeline.js';
export {
  PipelineLimitError,
  type Change,
  type OutputRow,
  type Pipeline,
} from './types.js';
