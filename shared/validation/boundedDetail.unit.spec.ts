import { expect } from 'chai';
import { bounded, boundedDetail, quoted, summarised } from './boundedDetail.ts';

describe('boundedDetail', () => {
  it('given a 422 list whose entries echo big inputs, when bounded, then each input is summarised and the rest kept', () => {
    const detail = [{ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: { big: 'x'.repeat(10_000), list: Array.from({ length: 50 }, (_, i) => i) } }];
    const [entry] = boundedDetail(detail) as Array<Record<string, unknown>>;
    expect(entry).to.deep.include({ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string' });
    const input = entry?.input as { big: string; list: unknown[] };
    expect(input.big).to.equal(`${'x'.repeat(200)}… (10000 characters)`);
    expect(input.list).to.have.length(11);
    expect(input.list.at(-1)).to.equal('… (40 more)');
  });

  it('given a detail that is ours (a message, allowed values), when bounded, then it is unchanged', () => {
    const detail = { message: 'Item type x is not allowed under y', item_type_passed: 'x', allowed_item_types: Array.from({ length: 30 }, (_, i) => `t${i}`) };
    expect(boundedDetail(detail)).to.deep.equal(detail);
    expect(boundedDetail('Item not found')).to.equal('Item not found');
    expect(boundedDetail(null)).to.equal(null);
  });

  it('given values whose toString is no function, when quoted or bounded, then nothing throws', () => {
    const hostile = JSON.parse('{"toString":"x","valueOf":1,"__proto__":{"a":1}}') as unknown;
    expect(quoted(hostile)).to.equal('{"toString":"x","valueOf":1,"__proto__":{"a":1}}');
    expect(quoted('0 0 * *')).to.equal('0 0 * *');
    expect(() => bounded(hostile)).not.to.throw();
  });

  it('given an input nested far deeper than the bound, when bounded, then it is cut at the bound', () => {
    expect(bounded(JSON.parse('[[[[[[1]]]]]]'))).to.deep.equal([[['[…]']]]);
  });

  it('given another system\'s long answer with control characters, when summarised, then one line of at most 200 characters, nothing of the rest', () => {
    const answer = `<html>\r\n<title>internal admin</title>\u001b[31m\u202e${'secret-'.repeat(5000)}TAIL`;
    const summary = summarised(answer);
    expect(Array.from(summary)).to.have.length(200);
    expect(summary).to.match(/^<html> <title>internal admin<\/title> \[31m secret-secret-/);
    expect(summary.endsWith('…')).to.equal(true);
    expect(summary).not.to.match(/[\p{Cc}\p{Cf}]/u);
    expect(summary).not.to.include('TAIL');
    expect(summarised('401 Incorrect API key provided')).to.equal('401 Incorrect API key provided');
    expect(Array.from(summarised('😀'.repeat(300)))).to.have.length(200);
  });
});
