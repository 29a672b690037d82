/**
 * Defaults computed for a new record sent without a value, as farmOS's default value callbacks
 * do. `unique_key` is DataStream::createUniqueKey: 32 hex characters, the shape of farmOS's
 * md5(mt_rand()), but from 128 random bits, since the key is what lets a device post readings.
 */
import { randomBytes } from 'node:crypto';
import type { DefaultCallback } from '../model/descriptor.ts';

export function defaultFromCallback(callback: DefaultCallback): string {
  switch (callback) {
    case 'unique_key':
      return randomBytes(16).toString('hex');
  }
}
