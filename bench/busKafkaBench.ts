import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { systemProgram } from '../ops/worker/systemPrograms.ts';
import { lowLoadLatency } from './latencyFigures.ts';
import { readProcStat } from './machineCpu.ts';
import { FINISHED, openBed } from './taskBench.ts';

/** The script that runs a throwaway Kafka broker for tests and benches (.ci/kafka). */
const KAFKA_SCRIPT = fileURLToPath(new URL('../.ci/kafka', import.meta.url));

const kafkaScript = (command: 'start' | 'stop' | 'status' | 'brokers' | 'pid'): { ok: boolean; output: string } => {
  try {
    // Only `brokers` answers on stdout; the others' progress goes to stderr, away from the bench's JSON lines.
    const stdout = command === 'brokers' || command === 'pid' ? 'pipe' : 2;
    return { ok: true, output: (execFileSync(systemProgram('bash'), [KAFKA_SCRIPT, command], { encoding: 'utf8', stdio: ['ignore', stdout, 'inherit'] }) ?? '').trim() };
  } catch {
    return { ok: false, output: '' };
  }
};

/** CPU time (user + system) of a process, in ms, from Linux's accounting; NaN when unknown. */
const processCpuMs = (pid: number | null): number => (pid === null ? NaN : (readProcStat(`/proc/${pid}/stat`)?.ownMs ?? NaN));

/** The broker's pid when it is the one .ci/kafka runs (its CPU is part of what a task costs). */
const brokerPid = (brokers: string): number | null => {
  if (brokers !== kafkaScript('brokers').output) return null;
  const pid = Number(kafkaScript('pid').output);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
};

/**
 * The broker: TEST_KAFKA_BROKERS when set, else the one `.ci/kafka start` runs (started here when
 * it is not running, and stopped again at the end: a bench leaves nothing behind it did not find).
 */
const benchBrokers = (): { brokers: string; source: string; stop: () => void } => {
  const given = process.env.TEST_KAFKA_BROKERS?.trim();
  if (given) return { brokers: given, source: 'TEST_KAFKA_BROKERS', stop: () => undefined };
  const running = kafkaScript('status').ok;
  if (running) console.error('bus-kafka: TEST_KAFKA_BROKERS is unset: using the broker .ci/kafka runs');
  if (!running) {
    console.error('bus-kafka: TEST_KAFKA_BROKERS is unset: starting a broker with .ci/kafka start (the first run fetches Kafka through Maven)');
    if (!kafkaScript('start').ok) throw new Error('bus-kafka: .ci/kafka start failed (its output is above)');
  }
  return {
    brokers: kafkaScript('brokers').output,
    source: running ? '.ci/kafka (already running)' : '.ci/kafka start (this run)',
    stop: () => void (running ? undefined : kafkaScript('stop')),
  };
};

/**
 * The task pipeline on the Kafka bus against the in-process bus, same run, same operator: end to
 * end latency of one new task (POST /task/run creating it, until it reads `success`) at low load,
 * and sustained throughput of 16 clients each creating and running tasks. A JavaScript operator
 * that reuses its process, so that the bus is a large share of each task rather than lost in
 * process start-up. The in-process figures are the baseline; each Kafka figure carries its ratio.
 */
export async function benchBusKafka(opts: { dir: string; seconds?: number; rounds?: number }): Promise<Array<Record<string, unknown>>> {
  const seconds = opts.seconds ?? 10;
  const rounds = opts.rounds ?? 40;
  const broker = benchBrokers();
  const pid = brokerPid(broker.brokers);
  try {
    const buses = [
      ['in_process', {}],
      // Configured like a deployment would (ops/config.ts busConfig), not through process.env.
      ['kafka', { BUS: 'kafka', KAFKA_BROKERS: broker.brokers, KAFKA_CLIENT_ID: `bench-${process.pid}-${Date.now()}` }],
    ] as const;
    const measured: Record<string, { latency: Record<string, unknown>; throughput: Record<string, unknown> }> = {};
    for (const [bus, env] of buses) {
      const bed = await openBed(opts.dir, env);
      try {
        const op = await bed.operator('javascript', true, `bus-${bus}`);
        let counter = 0;
        const createAndSucceed = async () => {
          const laui = String((await bed.api('/task/run', bed.createAndRun(`e2e-${counter++}`, op))).item_laui);
          for (;;) {
            const task = await bed.service.readStore.collection('items').peek(laui);
            if (task && FINISHED.includes(String(task.state))) {
              if (task.state !== 'success') throw new Error(`bus-kafka: task ${laui} ended ${String(task.state)}`);
              return;
            }
            await new Promise((resolve) => setTimeout(resolve, 1));
          }
        };
        // Warm-up: the first tasks pay for the group join, topic creation and the operator's process.
        for (let warm = 0; warm < 5; warm += 1) await createAndSucceed();
        const latency = await lowLoadLatency(rounds, Number.POSITIVE_INFINITY, createAndSucceed);
        const brokerCpu = processCpuMs(pid);
        const load = await bed.throughput(op, `bus-${bus}`, seconds, 'create');
        const perTask = (ms: number) => Number((ms / Math.max(load.tasks, 1)).toFixed(2));
        measured[bus] = {
          latency,
          throughput: {
            value: Number((load.tasks / load.seconds).toFixed(1)),
            errors: load.errors,
            p50_ms: load.p50,
            p99_ms: load.p99,
            // The service's event loop (per-thread accounting: other processes on the machine do not count).
            main_thread_cpu_ms_per_task: perTask(load.mainThreadCpuMs),
            // The broker's JVM, when it is .ci/kafka's: idle for the in-process bus.
            ...(bus === 'kafka' ? { broker_cpu_ms_per_task: perTask(processCpuMs(pid) - brokerCpu) } : {}),
          },
        };
      } finally {
        await bed.close();
      }
    }
    const baseline = measured.in_process;
    const kafka = measured.kafka;
    if (!baseline || !kafka) throw new Error('bus-kafka: a bus was not measured');
    const ratio = (subject: unknown, base: unknown) => Number((Number(subject) / Math.max(Number(base), 1e-9)).toFixed(2));
    const latencyFigure = (bus: string, latency: Record<string, unknown>) => ({
      figure: `bus.${bus}.task.e2e`,
      unit: 'ms',
      p50: latency.p50,
      p99: latency.p99,
      rounds: latency.rounds,
      load: latency.load,
      back_to_back: latency.back_to_back,
      measures: 'POST /task/run creating a new task of a no-op JavaScript operator (reused process) until the task reads success',
    });
    const throughputFigure = (bus: string, throughput: Record<string, unknown>) => ({
      figure: `bus.${bus}.task.throughput`,
      unit: 'tasks/s',
      ...throughput,
      seconds,
      submission: '16 clients, one POST /task/run creating and running a new task per request',
    });
    return [
      { ...latencyFigure('in_process', baseline.latency), note: 'baseline: the in-process bus, same run' },
      { ...latencyFigure('kafka', kafka.latency), baseline_p50: baseline.latency.p50, p50_ratio_to_baseline: ratio(kafka.latency.p50, baseline.latency.p50), broker: `${broker.brokers} (${broker.source})` },
      { ...throughputFigure('in_process', baseline.throughput), note: 'baseline: the in-process bus, same run' },
      { ...throughputFigure('kafka', kafka.throughput), baseline: baseline.throughput.value, ratio_to_baseline: ratio(kafka.throughput.value, baseline.throughput.value), broker: `${broker.brokers} (${broker.source})` },
    ];
  } finally {
    broker.stop();
  }
}
