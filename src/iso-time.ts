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

/**
 * Whether `text` is isoString(ms), read digit by digit without making the string (a tsr
 * block stores a datetime field that is its timestamp's ISO text as nothing: every point
 * of a write is checked).
 */
export function isIsoStringOf(text: string, ms: number): boolean {
  if (text.length !== 24 || !Number.isInteger(ms)) return text === isoString(ms);
  const dayStartMs = Math.floor(ms / 86_400_000) * 86_400_000;
  if (dayStartMs !== isoDayStartMs && isoString(ms).length !== 24) return false;
  if (!text.startsWith(isoDayPrefix)) return false;
  const inDay = ms - dayStartMs;
  return (
    hasDigits(text, 11, 2, Math.floor(inDay / 3_600_000)) &&
    text.charCodeAt(13) === COLON &&
    hasDigits(text, 14, 2, Math.floor(inDay / 60_000) % 60) &&
    text.charCodeAt(16) === COLON &&
    hasDigits(text, 17, 2, Math.floor(inDay / 1000) % 60) &&
    text.charCodeAt(19) === DOT &&
    hasDigits(text, 20, 3, inDay % 1000) &&
    text.charCodeAt(23) === Z
  );
}

const COLON = 0x3a;
const DOT = 0x2e;
const Z = 0x5a;

/** Whether text[at, at + width) is `value` in decimal, zero-padded to width. */
function hasDigits(text: string, at: number, width: number, value: number): boolean {
  for (let i = at + width - 1; i >= at; i -= 1) {
    if (text.charCodeAt(i) !== 0x30 + (value % 10)) return false;
    value = Math.floor(value / 10);
  }
  return true;
}

function pad2(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}
