/** Small helpers shared by the benchmarks: percentiles and a printed table. */
export function percentile(sortedUs: Float64Array | number[], p: number): number {
  if (sortedUs.length === 0) return NaN;
  const idx = Math.min(sortedUs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedUs.length) - 1));
  return sortedUs[idx] ?? NaN; // idx is within a non-empty array
}

export interface Row {
  name: string;
  callsPerSec: number;
  p50us: number;
  p99us: number;
}

export function summarise(name: string, samplesUs: Float64Array, totalMs: number): Row {
  const sorted = Float64Array.from(samplesUs).sort();
  return { name, callsPerSec: (samplesUs.length / totalMs) * 1000, p50us: percentile(sorted, 50), p99us: percentile(sorted, 99) };
}

export function printTable(title: string, rows: Row[]): void {
  console.log(`\n${title}`);
  console.log(`${'case'.padEnd(44)} ${'calls/s'.padStart(12)} ${'p50 us'.padStart(10)} ${'p99 us'.padStart(10)}`);
  for (const r of rows) {
    console.log(`${r.name.padEnd(44)} ${r.callsPerSec.toFixed(0).padStart(12)} ${r.p50us.toFixed(2).padStart(10)} ${r.p99us.toFixed(2).padStart(10)}`);
  }
}
