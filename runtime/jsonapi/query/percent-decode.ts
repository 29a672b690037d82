/**
 * URL-decoding of one query-string component the way PHP's urldecode() does it, but producing
 * text: `+` is a space, `%XX` escapes become bytes, and the bytes are read as UTF-8. It never
 * throws: an escape that is malformed (`%zz`, a trailing `%4`) or that does not belong to a valid
 * UTF-8 sequence (`%E9` alone) is kept as the raw text the client sent. decodeURIComponent throws
 * on both, and qs then keeps the whole component undecoded, which loses the valid escapes too.
 */

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Decode one key or value of a query string. */
export function percentDecode(component: string): string {
  const spaced = component.includes('+') ? component.replaceAll('+', ' ') : component;
  if (!spaced.includes('%')) return spaced;
  let out = '';
  let i = 0;
  while (i < spaced.length) {
    if (isEscapeAt(spaced, i)) {
      // Collect the whole run of escapes: a multi-byte character spans several of them.
      const start = i;
      const bytes: number[] = [];
      while (isEscapeAt(spaced, i)) {
        bytes.push(parseInt(spaced.slice(i + 1, i + 3), 16));
        i += 3;
      }
      out += decodeRun(Uint8Array.from(bytes), spaced.slice(start, i));
    } else {
      out += spaced[i];
      i += 1;
    }
  }
  return out;
}

function isEscapeAt(text: string, i: number): boolean {
  return text.charCodeAt(i) === 0x25 /* % */ && isHex(text.charCodeAt(i + 1)) && isHex(text.charCodeAt(i + 2));
}

function isHex(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);
}

/** Decode a run of escaped bytes; `raw` is its source text, three characters per byte. */
function decodeRun(bytes: Uint8Array, raw: string): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    // Some sequence is invalid: decode the valid ones and keep the escapes of the rest.
  }
  let out = '';
  let j = 0;
  while (j < bytes.length) {
    const length = sequenceLength(bytes[j]!);
    if (length > 0 && j + length <= bytes.length) {
      try {
        out += strictUtf8.decode(bytes.subarray(j, j + length));
        j += length;
        continue;
      } catch {
        // Overlong, surrogate or truncated sequence: fall through and keep the lead byte raw.
      }
    }
    out += raw.slice(3 * j, 3 * j + 3);
    j += 1;
  }
  return out;
}

/** The length of the UTF-8 sequence a lead byte announces, or 0 for a byte that cannot lead. */
function sequenceLength(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}
