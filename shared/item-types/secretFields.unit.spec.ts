import { expect } from 'chai';
import type { Sealed, SecretBox } from '../ports/SecretBox.ts';
import { sealSecretFields, secretFieldOpener } from './secretFields.ts';

/** A reversible stand-in for AES that counts its opens. */
const countingBox = () => {
  const box = {
    opens: 0,
    seal: (plaintext: string): Sealed => ({ v: 1, iv: '', tag: '', ct: Buffer.from(plaintext).toString('base64') }),
    open: (sealed: Sealed): string => {
      box.opens += 1;
      return Buffer.from(sealed.ct, 'base64').toString('utf8');
    },
  } satisfies SecretBox & { opens: number };
  return box;
};

describe('secretFieldOpener', () => {
  it('given the same sealed content opened for several runs, when opened, then it is decrypted once and every run gets its value', () => {
    const box = countingBox();
    const { content } = sealSecretFields('connection', { content: { password: 'pw-1' } }, box);
    const open = secretFieldOpener(box);
    expect(open(content)).to.deep.equal({ password: 'pw-1' });
    expect(open(content)).to.deep.equal({ password: 'pw-1' });
    expect(box.opens).to.equal(1);
  });

  it('given changed content (a new sealed value) or content that is not sealed, when opened, then the new value is decrypted and plain content passes through', () => {
    const box = countingBox();
    const open = secretFieldOpener(box);
    const first = sealSecretFields('connection', { content: { password: 'pw-1' } }, box).content;
    const second = sealSecretFields('connection', { content: { password: 'pw-2' } }, box).content;
    expect([open(first), open(second)]).to.deep.equal([{ password: 'pw-1' }, { password: 'pw-2' }]);
    expect(box.opens).to.equal(2);
    const plain = { host: 'db' };
    expect(open(plain)).to.equal(plain);
  });
});
