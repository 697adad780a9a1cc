import { expect } from 'chai';
import { isAllowedRedirect, resolveRedirect } from './isAllowedRedirect.ts';

const SERVICE = 'http://orchestrator.internal:8080';
const allowed = (uri: string, origins: ReadonlyArray<string> = ['https://app.example']) => isAllowedRedirect(uri, origins, SERVICE);

describe('isAllowedRedirect (what the browser will resolve)', () => {
  it('given paths and URLs on the service, loopback or a configured origin, when checked, then they are allowed', () => {
    for (const uri of [
      '/cb',
      '/cb?x=1#frag',
      'cb',
      `${SERVICE}/cb`,
      'http://localhost:3000/cb',
      'http://127.0.0.1/cb',
      'http://[::1]:9000/cb',
      'https://app.example/cb',
    ]) {
      expect(allowed(uri), uri).to.equal(true);
    }
  });

  it('given values that a browser resolves to another host, when checked, then each is refused', () => {
    for (const uri of [
      '/\t/evil.example/cb',
      '/\n/evil.example/cb',
      '/\r/evil.example/cb',
      '/\r\n/evil.example/cb',
      '\t//evil.example/cb',
      '//evil.example/cb',
      '/\\evil.example/cb',
      '\\\\evil.example/cb',
      '/\\/evil.example/cb',
      '\\/evil.example/cb',
      ' //evil.example/cb',
      'https://evil.example/cb',
      'https:evil.example/cb',
      'http://127.0.0.1.evil.example/cb',
      'http://localhost.evil.example/cb',
      'http://localhost@evil.example/cb',
      'http://127.0.0.1:80@evil.example/cb',
      'http://evil.example\\@localhost/cb',
      'https://app.example.evil.example/cb',
      'https://app.example:8443/cb',
      'http://app.example/cb',
    ]) {
      expect(allowed(uri), JSON.stringify(uri)).to.equal(false);
    }
  });

  it('given non-http schemes or userinfo, when checked, then they are refused even with "*"', () => {
    for (const uri of [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      'java\tscript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'file:///etc/passwd',
      'ftp://localhost/cb',
      'http://user:pass@localhost/cb',
      'http://evil.example@localhost/cb',
    ]) {
      expect(allowed(uri, ['*']), JSON.stringify(uri)).to.equal(false);
    }
  });

  it('given "*", when another http(s) origin is checked, then it is allowed', () => {
    expect(allowed('https://anything.example/cb', ['*'])).to.equal(true);
  });

  it('given an allowed value with tabs, when resolved, then the code goes to the normalised absolute URL that was checked', () => {
    expect(resolveRedirect('/c\tb?x=1', [], SERVICE)).to.equal(`${SERVICE}/cb?x=1`);
    // A path that would serialise as `//host` when kept relative stays anchored to the service.
    expect(resolveRedirect('/.//evil.example/cb', [], SERVICE)).to.equal(`${SERVICE}//evil.example/cb`);
    expect(resolveRedirect('http://127.1:3000/cb', [], SERVICE)).to.equal('http://127.0.0.1:3000/cb');
  });
});
