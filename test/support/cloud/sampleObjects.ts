import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

/**
 * The objects the embedded-engine tests read, made with DuckDB: Parquet partitioned by year,
 * CSV files, one newline-delimited JSON file. Returns key -> bytes.
 *   orders.parquet                     100 rows: id 0..99, name, amount (id * 1.5)
 *   sales/year=2023/part-0.parquet     3 rows (region, total)
 *   sales/year=2024/part-0.parquet     2 rows
 *   sales/year=2024/nested/part-1.parquet 1 row (reached by ** only)
 *   csv/a.csv, csv/b.csv               2 rows each (id, label)
 *   events.json                        2 rows
 */
export const sampleObjects = async (): Promise<Map<string, Buffer>> => {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const folder = mkdtempSync(join(tmpdir(), 'sample-objects-'));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const file = (key: string) => {
    const path = join(folder, ...key.split('/'));
    mkdirSync(dirname(path), { recursive: true });
    return `'${path}'`;
  };
  try {
    await connection.run(`COPY (SELECT range AS id, 'name-' || range AS name, range * 1.5 AS amount FROM range(100)) TO ${file('orders.parquet')} (FORMAT parquet)`);
    await connection.run(`COPY (SELECT * FROM (VALUES ('north', 10), ('south', 20), ('east', 30)) t(region, total)) TO ${file('sales/year=2023/part-0.parquet')} (FORMAT parquet)`);
    await connection.run(`COPY (SELECT * FROM (VALUES ('north', 11), ('west', 41)) t(region, total)) TO ${file('sales/year=2024/part-0.parquet')} (FORMAT parquet)`);
    await connection.run(`COPY (SELECT * FROM (VALUES ('deep', 7)) t(region, total)) TO ${file('sales/year=2024/nested/part-1.parquet')} (FORMAT parquet)`);
    await connection.run(`COPY (SELECT * FROM (VALUES (1, 'one'), (2, 'two')) t(id, label)) TO ${file('csv/a.csv')} (FORMAT csv, HEADER)`);
    await connection.run(`COPY (SELECT * FROM (VALUES (3, 'three'), (4, 'four')) t(id, label)) TO ${file('csv/b.csv')} (FORMAT csv, HEADER)`);
    await connection.run(`COPY (SELECT * FROM (VALUES ('start', TIMESTAMP '2024-05-01 10:00:00'), ('stop', TIMESTAMP '2024-05-01 10:05:00')) t(kind, "at")) TO ${file('events.json')} (FORMAT json)`);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
  const objects = new Map<string, Buffer>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else objects.set(relative(folder, path).split('\\').join('/'), readFileSync(path));
    }
  };
  walk(folder);
  rmSync(folder, { recursive: true, force: true });
  return objects;
};
