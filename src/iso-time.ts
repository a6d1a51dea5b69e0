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
 * Whether `text` is isoString(ms), without making the string (a tsr block stores a datetime
 * field that is its timestamp's ISO text as nothing: every point of a write is checked):
 * the day's part is compared whole, and the time of day read from the text's digits,
 * each field within its range, must be ms's.
 */
export function isIsoStringOf(text: string, ms: number): boolean {
  if (text.length !== 24 || !Number.isInteger(ms)) return text === isoString(ms);
  const dayStartMs = Math.floor(ms / 86_400_000) * 86_400_000;
  if (dayStartMs !== isoDayStartMs && isoString(ms).length !== 24) return false;
  if (!text.startsWith(isoDayPrefix)) return false;
  if (text.charCodeAt(13) !== COLON || text.charCodeAt(16) !== COLON || text.charCodeAt(19) !== DOT || text.charCodeAt(23) !== Z) return false;
  const hours = decimalDigits(text, 11, 2);
  const minutes = decimalDigits(text, 14, 2);
  const seconds = decimalDigits(text, 17, 2);
  const millis = decimalDigits(text, 20, 3);
  if (hours < 0 || hours > 23 || minutes < 0 || minutes > 59 || seconds < 0 || seconds > 59 || millis < 0) return false;
  return ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis === ms - dayStartMs;
}

const COLON = 0x3a;
const DOT = 0x2e;
const Z = 0x5a;

/** The decimal number of text[at, at + width); -1 when a character is not a digit (ISO text read digit by digit). */
export function decimalDigits(text: string, at: number, width: number): number {
  let value = 0;
  for (let i = at; i < at + width; i += 1) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

function pad2(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}
