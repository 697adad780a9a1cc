import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { PasswordHasher } from '../../shared/ports/PasswordHasher.ts';

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCallback(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
  );

/**
 * scrypt with N=2^15, r=8, p=1: 32 MiB and about 140 ms per hash on this class of machine, which
 * bounds online guessing without letting a burst of logins exhaust memory.
 * Parameters are stored in the hash so they can be raised later without breaking old hashes.
 */
export const scryptPasswords = (cost = 2 ** 15): PasswordHasher => ({
  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const key = await scrypt(password, salt, 32, { N: cost, r: 8, p: 1, maxmem: 128 * cost * 8 * 2 });
    return `scrypt$${cost}$8$1$${salt.toString('base64')}$${key.toString('base64')}`;
  },
  async verify(password: string, stored: string): Promise<boolean> {
    const [scheme, n, r, p, salt, expected] = stored.split('$');
    if (scheme !== 'scrypt' || !n || !r || !p || !salt || !expected) return false;
    const expectedKey = Buffer.from(expected, 'base64');
    const N = Number(n);
    const key = await scrypt(password, Buffer.from(salt, 'base64'), expectedKey.length, {
      N,
      r: Number(r),
      p: Number(p),
      maxmem: 128 * N * Number(r) * 2,
    });
    return key.length === expectedKey.length && timingSafeEqual(key, expectedKey);
  },
});
