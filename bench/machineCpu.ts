import { readFileSync } from 'node:fs';

/** CPU time the whole machine spent so far (user, nice, system, irq, softirq), in ms; NaN off Linux. */
export const machineCpuMs = (): number => {
  try {
    const [user, nice, system, , , irq, softirq] = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/).slice(1).map(Number) ?? [];
    return ((user ?? NaN) + (nice ?? NaN) + (system ?? NaN) + (irq ?? NaN) + (softirq ?? NaN)) * 10; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
};
