import { expect } from 'chai';
import {
  advanceLogicalDate,
  cronGranularity,
  cronParts,
  floorToGranularity,
  initialLogicalDate,
  initialNextRunDate,
  isValidFrequency,
  nextCronDate,
  nextOrSameCronDate,
  previousCronDate,
  previousOrSameCronDate,
} from './cron.ts';

const d = (value: string): Date => new Date(value);
const isoOf = (date: Date): string => date.toISOString();

/** `count` successive logical dates after `from`. */
function steps(from: string, frequency: string, count: number): string[] {
  const out: string[] = [];
  let at = d(from);
  for (let i = 0; i < count; i += 1) {
    at = advanceLogicalDate(at, frequency);
    out.push(isoOf(at));
  }
  return out;
}

describe('task cron: frequency validation (spec 4.2 rule 3)', () => {
  it('given ADHOC, when validated, then it is valid', () => {
    expect(isValidFrequency('ADHOC')).to.equal(true);
  });

  it('given 5-part expressions cron-parser accepts, when validated, then they are valid', () => {
    for (const frequency of [
      '0 0 * * *',
      '*/5 * * * *',
      '0 0 L * *',
      '0 12 * * MON-FRI',
      '0 0 * * THU',
      '0 0 1 jan *',
      '0 0 * * 1#1',
      '0 0 ? * *',
      '  0  0 * * *  ',
    ]) {
      expect(isValidFrequency(frequency), frequency).to.equal(true);
    }
  });

  it('given values that are not exactly 5 parseable parts, when validated, then they are invalid', () => {
    for (const frequency of [
      '',
      'adhoc',
      '* * * *',
      '0 0 0 * * *',
      '@daily',
      'a b c d e',
      '60 * * * *',
      '0 24 * * *',
      '0 0 0 * *',
      '0 0 1 13 *',
      '*/0 * * * *',
      '0 0 30 2 *',
      '0 0 31 4,6 *',
    ]) {
      expect(isValidFrequency(frequency), JSON.stringify(frequency)).to.equal(false);
    }
  });

  it('given the H (hash jitter) token, when validated, then it is rejected as non-deterministic', () => {
    expect(isValidFrequency('H * * * *')).to.equal(false);
    expect(isValidFrequency('H(0-10) * * * *')).to.equal(false);
    expect(isValidFrequency('0 0 * * H')).to.equal(false);
    expect(isValidFrequency('0 0 * * THU')).to.equal(true);
  });

  it('given non-string values, when validated, then they are invalid', () => {
    for (const frequency of [null, undefined, 5, {}, ['0', '0', '*', '*', '*']]) {
      expect(isValidFrequency(frequency)).to.equal(false);
    }
  });

  it('given runs of whitespace, when split, then the 5 fields are returned', () => {
    expect(cronParts(' 0  0 * *\t* ')).to.deep.equal(['0', '0', '*', '*', '*']);
    expect(cronParts('0 0 * *')).to.equal(null);
  });
});

describe('task cron: next and previous fire dates (UTC)', () => {
  it('given a date exactly on a fire time, when the next fire is asked, then it is strictly later', () => {
    expect(isoOf(nextCronDate('0 0 * * *', d('2024-01-15T00:00:00Z')))).to.equal('2024-01-16T00:00:00.000Z');
    expect(isoOf(nextCronDate('0 0 * * *', d('2024-01-14T23:59:59.999Z')))).to.equal('2024-01-15T00:00:00.000Z');
  });

  it('given the 31st of every month, when iterating, then months without a 31st are skipped', () => {
    let at = d('2024-01-31T00:00:00Z');
    const fires: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      at = nextCronDate('0 0 31 * *', at);
      fires.push(isoOf(at).slice(0, 10));
    }
    expect(fires).to.deep.equal(['2024-03-31', '2024-05-31', '2024-07-31', '2024-08-31', '2024-10-31']);
  });

  it('given 29 February, when iterating, then only leap years fire', () => {
    expect(isoOf(nextCronDate('0 0 29 2 *', d('2023-03-01T00:00:00Z')))).to.equal('2024-02-29T00:00:00.000Z');
    expect(isoOf(nextCronDate('0 0 29 2 *', d('2024-02-29T00:00:00Z')))).to.equal('2028-02-29T00:00:00.000Z');
    // 2100 is not a leap year
    expect(isoOf(nextCronDate('0 0 29 2 *', d('2096-03-01T00:00:00Z')))).to.equal('2104-02-29T00:00:00.000Z');
  });

  it('given the last day of the month (L), when February comes, then leap and common years differ', () => {
    expect(isoOf(nextCronDate('0 0 L * *', d('2024-02-01T00:00:00Z')))).to.equal('2024-02-29T00:00:00.000Z');
    expect(isoOf(nextCronDate('0 0 L * *', d('2023-02-01T00:00:00Z')))).to.equal('2023-02-28T00:00:00.000Z');
  });

  it('given European and US DST change days, when a daily 01:30 and 02:30 schedule runs, then fires stay 24 h apart in UTC', () => {
    for (const [frequency, from] of [
      ['30 1 * * *', '2024-03-30T00:00:00Z'],
      ['30 1 * * *', '2024-10-26T00:00:00Z'],
      ['30 2 * * *', '2024-03-09T00:00:00Z'],
      ['30 2 * * *', '2024-11-02T00:00:00Z'],
    ] as const) {
      const first = nextCronDate(frequency, d(from));
      const second = nextCronDate(frequency, first);
      const third = nextCronDate(frequency, second);
      expect(second.getTime() - first.getTime(), frequency + from).to.equal(86_400_000);
      expect(third.getTime() - second.getTime(), frequency + from).to.equal(86_400_000);
      expect(first.getUTCHours()).to.equal(Number(frequency.split(' ')[1]));
    }
  });

  it('given a fire time, when the previous-or-same fire is asked, then the fire itself is returned', () => {
    expect(isoOf(previousOrSameCronDate('*/15 * * * *', d('2024-01-15T10:15:00Z')))).to.equal('2024-01-15T10:15:00.000Z');
    expect(isoOf(previousOrSameCronDate('*/15 * * * *', d('2024-01-15T10:29:59.999Z')))).to.equal('2024-01-15T10:15:00.000Z');
    expect(isoOf(previousCronDate('*/15 * * * *', d('2024-01-15T10:15:00Z')))).to.equal('2024-01-15T10:00:00.000Z');
  });

  it('given a fire time, when the next-or-same fire is asked, then the fire itself is returned', () => {
    expect(isoOf(nextOrSameCronDate('0 0 * * *', d('2024-01-15T00:00:00Z')))).to.equal('2024-01-15T00:00:00.000Z');
    expect(isoOf(nextOrSameCronDate('0 0 * * *', d('2024-01-15T00:00:00.001Z')))).to.equal('2024-01-16T00:00:00.000Z');
  });

  it('given ADHOC or an invalid expression, when a fire date is asked, then it throws', () => {
    expect(() => nextCronDate('ADHOC', d('2024-01-01T00:00:00Z'))).to.throw(RangeError);
    expect(() => nextCronDate('* * * *', d('2024-01-01T00:00:00Z'))).to.throw(RangeError);
    expect(() => nextCronDate('61 * * * *', d('2024-01-01T00:00:00Z'))).to.throw();
    expect(() => cronGranularity('ADHOC')).to.throw(RangeError);
  });
});

describe('task cron: granularity', () => {
  const cases: Array<[string, string]> = [
    ['*/5 * * * *', 'minute'],
    ['5,35 * * * *', 'minute'],
    ['* * * * *', 'minute'],
    ['15 * * * *', 'hour'],
    ['0 */2 * * *', 'hour'],
    ['0 0 * * *', 'day'],
    ['30 2 * * *', 'day'],
    ['0 0 * * 1-5', 'day'],
    ['0 0 1,15 * *', 'day'],
    ['0 0 1 * 1', 'day'],
    ['0 0 * 1 *', 'day'],
    ['0 0 * * 1', 'week'],
    ['0 0 * * SUN', 'week'],
    ['0 0 * * 7', 'week'],
    ['0 0 1 * *', 'month'],
    ['0 0 31 * *', 'month'],
    ['0 0 L * *', 'month'],
    ['0 0 * * 1#1', 'month'],
    ['0 0 * * 5L', 'month'],
    ['0 0 1 */3 *', 'month'],
    ['0 0 1 1 *', 'year'],
    ['0 0 29 2 *', 'year'],
  ];
  for (const [frequency, granularity] of cases) {
    it(`given ${frequency}, when its granularity is asked, then it is ${granularity}`, () => {
      expect(cronGranularity(frequency)).to.equal(granularity);
    });
  }
});

describe('task cron: logical date flooring (spec 2.4)', () => {
  const cases: Array<[string, string, string]> = [
    ['0 0 * * *', '2024-01-15T13:45:12.345Z', '2024-01-15T00:00:00.000Z'],
    ['30 2 * * *', '2024-01-15T01:00:00Z', '2024-01-15T00:00:00.000Z'],
    ['0 0 1 * *', '2024-01-15T13:45:00Z', '2024-01-01T00:00:00.000Z'],
    ['0 0 31 * *', '2024-02-29T12:00:00Z', '2024-02-01T00:00:00.000Z'],
    ['*/15 * * * *', '2024-01-15T10:17:33Z', '2024-01-15T10:15:00.000Z'],
    ['5,35 * * * *', '2024-01-15T10:20:00Z', '2024-01-15T10:05:00.000Z'],
    ['5,35 * * * *', '2024-01-15T10:04:00Z', '2024-01-15T09:35:00.000Z'],
    ['30 * * * *', '2024-01-15T10:45:00Z', '2024-01-15T10:00:00.000Z'],
    ['30 * * * *', '2024-01-15T10:15:00Z', '2024-01-15T10:00:00.000Z'],
    ['0 0 * * 3', '2024-01-19T08:00:00Z', '2024-01-19T00:00:00.000Z'],
    ['0 0 1 7 *', '2024-08-15T08:00:00Z', '2024-01-01T00:00:00.000Z'],
    ['0 0 * * *', '2024-01-15T00:00:00Z', '2024-01-15T00:00:00.000Z'],
  ];
  for (const [frequency, at, floored] of cases) {
    it(`given ${frequency} and ${at}, when floored, then it is ${floored}`, () => {
      expect(isoOf(floorToGranularity(d(at), frequency))).to.equal(floored);
    });
  }

  it('given ADHOC, when floored, then the date is unchanged', () => {
    expect(isoOf(floorToGranularity(d('2024-01-15T13:45:12.345Z'), 'ADHOC'))).to.equal('2024-01-15T13:45:12.345Z');
  });
});

describe('task cron: advancing the logical date', () => {
  it('given a daily schedule across February of a leap year and of a common year, when advanced, then every day is visited', () => {
    expect(steps('2024-02-27T00:00:00Z', '0 0 * * *', 3)).to.deep.equal([
      '2024-02-28T00:00:00.000Z',
      '2024-02-29T00:00:00.000Z',
      '2024-03-01T00:00:00.000Z',
    ]);
    expect(steps('2023-02-27T00:00:00Z', '0 0 * * *', 2)).to.deep.equal(['2023-02-28T00:00:00.000Z', '2023-03-01T00:00:00.000Z']);
    expect(steps('2024-12-31T00:00:00Z', '0 0 * * *', 1)).to.deep.equal(['2025-01-01T00:00:00.000Z']);
  });

  it('given a daily schedule over a whole year with DST changes, when advanced, then each step is exactly 24 h', () => {
    let at = d('2024-01-01T00:00:00Z');
    for (let i = 0; i < 366; i += 1) {
      const next = advanceLogicalDate(at, '0 0 * * *');
      expect(next.getTime() - at.getTime()).to.equal(86_400_000);
      at = next;
    }
    expect(isoOf(at)).to.equal('2025-01-01T00:00:00.000Z');
  });

  it('given a daily schedule at 02:30, when advanced from midnight, then it moves a whole day (never stuck on the same day)', () => {
    expect(steps('2024-01-15T00:00:00Z', '30 2 * * *', 2)).to.deep.equal(['2024-01-16T00:00:00.000Z', '2024-01-17T00:00:00.000Z']);
  });

  it('given the 31st of every month, when advanced, then months without a 31st are skipped', () => {
    expect(steps('2024-01-01T00:00:00Z', '0 0 31 * *', 5)).to.deep.equal([
      '2024-03-01T00:00:00.000Z',
      '2024-05-01T00:00:00.000Z',
      '2024-07-01T00:00:00.000Z',
      '2024-08-01T00:00:00.000Z',
      '2024-10-01T00:00:00.000Z',
    ]);
  });

  it('given an unaligned logical date in a month without a fire, when advanced, then the next month with a fire follows', () => {
    expect(steps('2024-02-01T00:00:00Z', '0 0 31 * *', 1)).to.deep.equal(['2024-03-01T00:00:00.000Z']);
  });

  it('given monthly and last-day schedules, when advanced, then every month is visited', () => {
    expect(steps('2024-01-01T00:00:00Z', '0 0 1 * *', 3)).to.deep.equal([
      '2024-02-01T00:00:00.000Z',
      '2024-03-01T00:00:00.000Z',
      '2024-04-01T00:00:00.000Z',
    ]);
    expect(steps('2024-01-01T00:00:00Z', '0 0 L * *', 2)).to.deep.equal(['2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z']);
  });

  it('given 29 February yearly, when advanced, then it moves from leap year to leap year', () => {
    expect(steps('2024-01-01T00:00:00Z', '0 0 29 2 *', 2)).to.deep.equal(['2028-01-01T00:00:00.000Z', '2032-01-01T00:00:00.000Z']);
  });

  it('given sub-hourly, hourly, weekly and weekday schedules, when advanced, then one cron step is taken', () => {
    expect(steps('2024-01-15T10:15:00Z', '*/15 * * * *', 2)).to.deep.equal(['2024-01-15T10:30:00.000Z', '2024-01-15T10:45:00.000Z']);
    expect(steps('2024-01-15T23:45:00Z', '*/15 * * * *', 1)).to.deep.equal(['2024-01-16T00:00:00.000Z']);
    expect(steps('2024-01-15T10:00:00Z', '30 * * * *', 1)).to.deep.equal(['2024-01-15T11:00:00.000Z']);
    expect(steps('2024-01-15T00:00:00Z', '0 0 * * 1', 1)).to.deep.equal(['2024-01-22T00:00:00.000Z']);
    expect(steps('2024-01-19T00:00:00Z', '0 0 * * 1-5', 1)).to.deep.equal(['2024-01-22T00:00:00.000Z']);
  });

  it('given ADHOC, when advanced, then it throws', () => {
    expect(() => advanceLogicalDate(d('2024-01-15T00:00:00Z'), 'ADHOC')).to.throw(RangeError);
  });
});

describe('task cron: first logical date and first run date', () => {
  it('given an aligned start_date, when the first logical date is asked, then it is the start_date', () => {
    expect(isoOf(initialLogicalDate(d('2024-01-15T00:00:00Z'), '0 0 * * *'))).to.equal('2024-01-15T00:00:00.000Z');
  });

  it('given unaligned start dates, when the first logical date is asked, then it is floored, or moved to the first unit holding a fire', () => {
    expect(isoOf(initialLogicalDate(d('2024-01-15T01:00:00Z'), '30 2 * * *'))).to.equal('2024-01-15T00:00:00.000Z');
    expect(isoOf(initialLogicalDate(d('2024-01-20T10:00:00Z'), '0 0 * * 1-5'))).to.equal('2024-01-22T00:00:00.000Z');
    expect(isoOf(initialLogicalDate(d('2024-02-15T00:00:00Z'), '0 0 31 * *'))).to.equal('2024-03-01T00:00:00.000Z');
    expect(isoOf(initialLogicalDate(d('2024-01-15T10:17:00Z'), '*/15 * * * *'))).to.equal('2024-01-15T10:15:00.000Z');
  });

  it('given a start_date, when the first run date is asked, then it is the first fire at or after it', () => {
    expect(isoOf(initialNextRunDate(d('2024-01-15T00:00:00Z'), '0 0 * * *'))).to.equal('2024-01-15T00:00:00.000Z');
    expect(isoOf(initialNextRunDate(d('2024-01-15T00:00:01Z'), '0 0 * * *'))).to.equal('2024-01-16T00:00:00.000Z');
  });
});
