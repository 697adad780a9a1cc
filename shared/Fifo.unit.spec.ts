import { expect } from 'chai';
import { Fifo } from './Fifo.ts';

describe('Fifo', () => {
  it('given pushes and shifts interleaved past compaction, when read, then items come out in push order', () => {
    const fifo = new Fifo<number>();
    const out: number[] = [];
    for (let i = 0; i < 100; i += 1) {
      fifo.push(i);
      if (i % 3 === 2) out.push(fifo.shift() ?? -1, fifo.shift() ?? -1);
    }
    expect(fifo.length).to.equal(100 - out.length);
    expect(out).to.deep.equal(Array.from({ length: out.length }, (_, i) => i));
    expect(fifo.peek()).to.equal(out.length);
    expect(fifo.at(1)).to.equal(out.length + 1);
    expect(fifo.toArray()).to.deep.equal(Array.from({ length: 100 - out.length }, (_, i) => out.length + i));
    while (fifo.length > 0) fifo.shift();
    expect([fifo.shift(), fifo.peek(), fifo.at(0)]).to.deep.equal([undefined, undefined, undefined]);
  });
});
