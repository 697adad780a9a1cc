import { Notice } from './Notice.tsx';

const cell = (value: unknown): string => {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
};

/** The `{columns, rows}` answer of POST /logs/query and POST /query/execute as a table. */
export const ResultTable = ({ columns, rows, caption }: { columns: string[]; rows: unknown[][]; caption: string }) => (
  <div className="table-scroll" tabIndex={0} role="region" aria-label={caption}>
    <table className="results">
      <caption className="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {columns.map((column, index) => (
            <th key={`${column}-${index}`} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, rowIndex) => (
          <tr key={rowIndex}>
            {row.map((value, index) => (
              <td key={index} className={value === null ? 'null' : undefined}>
                {cell(value)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

/** A statement's answer: how many rows (and whether the limit cut them), then the rows. */
export const QueryResult = ({ answer, caption }: { answer: { columns: string[]; rows: unknown[][]; row_count?: number; truncated?: boolean }; caption: string }) => (
  <>
    <Notice kind="info">
      {answer.row_count ?? answer.rows.length} rows{answer.truncated ? ' (truncated at the row limit)' : ''}
    </Notice>
    <ResultTable caption={caption} columns={answer.columns} rows={answer.rows} />
  </>
);
