import { expect } from 'chai';
import { clientAddress } from './clientAddress.ts';

describe('clientAddress', () => {
  it('given IPv4, IPv4-mapped IPv6 and IPv6 addresses, when keyed, then v4 stays whole and v6 is keyed by its /64', () => {
    expect(clientAddress('203.0.113.7')).to.equal('203.0.113.7');
    expect(clientAddress('::ffff:203.0.113.7')).to.equal('203.0.113.7');
    expect(clientAddress('2001:db8:1:2:3:4:5:6')).to.equal('2001:db8:1:2::/64');
    expect(clientAddress('2001:0db8:0001:0002:ffff::1')).to.equal('2001:db8:1:2::/64');
    expect(clientAddress('2001:db8::1')).to.equal('2001:db8:0:0::/64');
    expect(clientAddress('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(clientAddress('::1')).to.equal('0:0:0:0::/64');
    expect(clientAddress('')).to.equal('unknown');
  });
});
