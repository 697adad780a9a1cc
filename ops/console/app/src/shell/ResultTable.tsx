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
