// ISO 8601 strings of epoch milliseconds, as Date.prototype.toISOString writes them, fast
// for the many timestamps of one day (tsr blocks store a datetime field as its timestamp;
// windows show their start): the date part is formatted once per day. And back:
// parseDatetime reads an ISO 8601 datetime (payload checks at ingest, the expression
// language's datetime values). Pure.

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

// Datetime: date, then optionally T, hours and minutes, optional seconds with up to 9
// fraction digits, and an optional zone (none means UTC, as everywhere on this platform).
const DATETIME_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

const millisPerMinute = 60_000;
const millisPerDay = 86_400_000;

/** The last text the fast path read, and its time (none at first: '' is no datetime). */
const lastParsed: { text: string | undefined; ms: number } = { text: undefined, ms: 0 };

/**
 * Parses an ISO 8601 datetime string to epoch milliseconds, or undefined if malformed.
 * Shared with the ingest path. Checks the calendar itself because Date.parse rolls
 * 2023-02-30 over to March and reads a zoneless time as local time. Fraction digits
 * beyond milliseconds are truncated.
 */
export function parseDatetime(value: string): number | undefined {
  // Ingest reads a payload's event time right after its check read the same text.
  if (value === lastParsed.text) return lastParsed.ms;
  if ((value.length === 24 || value.length === 20) && value.charCodeAt(value.length - 1) === 90 /* Z */) {
    const fast = parseUtcDatetime(value);
    if (fast !== undefined) {
      lastParsed.text = value;
      lastParsed.ms = fast;
      return fast;
    }
  }
  const match = DATETIME_PATTERN.exec(value);
  if (match === null) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const [hour, minute, second] = [Number(match[4] ?? 0), Number(match[5] ?? 0), Number(match[6] ?? 0)];
  if (!isCalendarDate(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined;
  const offsetMinutes = parseOffsetMinutes(match[8]);
  if (offsetMinutes === undefined) return undefined;
  const millis = Number((match[7] ?? '').padEnd(3, '0').slice(0, 3));
  const minutesOfDay = hour * 60 + minute - offsetMinutes;
  return daysFromCivil(year, month, day) * millisPerDay + minutesOfDay * millisPerMinute + second * 1000 + millis;
}

/**
 * The common form, 'YYYY-MM-DDTHH:MM:SS.sssZ' or 'YYYY-MM-DDTHH:MM:SSZ' (what
 * toISOString writes), read digit by digit: the pattern's captures cost most of a point's
 * validation at ingest. undefined for anything else, which the pattern reads.
 */
function parseUtcDatetime(value: string): number | undefined {
  if (value.charCodeAt(4) !== 45 || value.charCodeAt(7) !== 45 || value.charCodeAt(10) !== 84 || value.charCodeAt(13) !== 58 || value.charCodeAt(16) !== 58) return undefined;
  const year = decimalDigits(value, 0, 4);
  const month = decimalDigits(value, 5, 2);
  const day = decimalDigits(value, 8, 2);
  const hour = decimalDigits(value, 11, 2);
  const minute = decimalDigits(value, 14, 2);
  const second = decimalDigits(value, 17, 2);
  let millis = 0;
  if (value.length === 24) {
    if (value.charCodeAt(19) !== 46) return undefined;
    millis = decimalDigits(value, 20, 3);
  }
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0 || millis < 0) return undefined;
  if (!isCalendarDate(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined;
  return daysFromCivil(year, month, day) * millisPerDay + (hour * 60 + minute) * millisPerMinute + second * 1000 + millis;
}

/** Minutes east of UTC for 'Z', '+05:30' or '-0800'; 0 without a zone; undefined if out of range. */
function parseOffsetMinutes(zone: string | undefined): number | undefined {
  if (zone === undefined || zone === 'Z' || zone === 'z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = Number(digits.slice(2));
  if (hours > 23 || minutes > 59) return undefined;
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

/** Whether the year, month (1–12) and day name a day of the proleptic Gregorian calendar. */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
 * Date.UTC is not used because it maps years 0..99 to 1900..1999.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const shiftedYear = month <= 2 ? year - 1 : year;
  const era = Math.floor(shiftedYear / 400);
  const yearOfEra = shiftedYear - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
