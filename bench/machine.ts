// What every benchmark records about the machine it ran on: figures are only comparable
// within one run, and the load average says how busy the shared cores were.

import os from 'node:os';

export function machine(loadAverageBefore: number) {
  const cpus = os.cpus();
  const round2 = (value: number) => Math.round(value * 100) / 100;
  return {
    cpus: cpus.length,
    model: cpus[0]?.model ?? 'unknown',
    node: process.version,
    loadAverage1m: { before: round2(loadAverageBefore), after: round2(os.loadavg()[0]!) },
  };
}
