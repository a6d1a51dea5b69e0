// ISO 8601 strings of epoch milliseconds, as Date.prototype.toISOString writes them, fast
// for the many timestamps of one day (tsr blocks store a datetime field as its timestamp;
// windows show their start): the date part is formatted once per day. Pure.

let isoDayStartMs = NaN;
let isoDayPrefix = '';

/**
 * `new Date(ms).toISOString()`: the date part is formatted once per day. Years outside 0 to
 * 9999, and milliseconds with a fraction, go to toISOString itself.
 */
export function isoString(ms: number): string {
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const dayStartMs = Math.floor(ms / 86_400_000) * 86_400_000;
  if (dayStartMs !== isoDayStartMs) {
    const full = new Date(ms).toISOString();
    if (full.length !== 24) return full;
    isoDayStartMs = dayStartMs;
    isoDayPrefix = full.slice(0, 11);
  }
  const inDay = ms - dayStartMs;
  const hours = Math.floor(inDay / 3_600_000);
  const minutes = Math.floor(inDay / 60_000) % 60;
  const seconds = Math.floor(inDay / 1000) % 60;
  const millis = inDay % 1000;
  return `${isoDayPrefix}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

function pad2(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}
