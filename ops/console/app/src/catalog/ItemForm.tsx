import { useId, useMemo, useState, type FormEvent } from 'react';
import { api, ApiError, errorText } from '../api.ts';
import { LazyCodeEditor } from '../shell/LazyCodeEditor.tsx';
import { Notice } from '../shell/Notice.tsx';
import { codeLanguages, FieldError, fieldsOf, requestFields, toInput, type CodeValue, type FieldSpec, type FieldValue } from './formFields.ts';
import { ReferenceSelect } from './ReferenceSelect.tsx';
import type { Item, ItemTypeInfo } from './types.ts';
import { DATES_REQUIRED_DETAIL, scheduleFieldsOf } from '../../../../../shared/task/scheduleDetails.ts';

interface Props {
  info: ItemTypeInfo;
  types: Map<string, ItemTypeInfo>;
  /** The item being edited; null for a new one. */
  item: Item | null;
  parentLaui: string | null;
  /** Initial values of a new item (a task's project and account, from where it is created). */
  defaults?: Record<string, unknown>;
  onSaved(laui: string): void;
  onCancel(): void;
}

/**
 * 422 entries name their field in `loc` (`['body', 'name']`): shown beside that field. A task's
 * schedule refusal is one string (POST /task/run's): shown beside the fields it is about, the blank
 * ones when it asks for dates.
 */
const fieldErrorsOf = (error: unknown, values: Record<string, FieldValue>): Record<string, string> => {
  if (!(error instanceof ApiError)) return {};
  if (typeof error.detail === 'string') {
    const about = scheduleFieldsOf(error.detail);
    const blank = about.filter((field) => String(values[field] ?? '').trim() === '');
    const detail = error.detail;
    return Object.fromEntries((error.detail === DATES_REQUIRED_DETAIL && blank.length > 0 ? blank : about).map((field) => [field, detail]));
  }
  if (!Array.isArray(error.detail)) return {};
  const errors: Record<string, string> = {};
  for (const entry of error.detail as Array<{ loc?: unknown[]; msg?: string }>) {
    const field = (entry.loc ?? []).find((part, index) => index > 0 && typeof part === 'string');
    if (typeof field === 'string') errors[field] = entry.msg ?? 'invalid';
  }
  return errors;
};

/**
 * Create or edit a catalog item with a form built from its type's JSON Schema: text, choices,
 * numbers, references to other items, code editors for codeblocks and JSON for the rest.
 */
export const ItemForm = ({ info, types, item, parentLaui, defaults = {}, onSaved, onCancel }: Props) => {
  const fields = useMemo(() => fieldsOf(info), [info]);
  const [values, setValues] = useState<Record<string, FieldValue>>(() =>
    Object.fromEntries(fields.map((field) => [field.key, toInput(field, item ? item[field.key] : defaults[field.key])])),
  );
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const headingId = useId();
  const prefix = useId();

  const set = (key: string, value: FieldValue): void => setValues((previous) => ({ ...previous, [key]: value }));

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setErrors({});
    setFailure(null);
    let body: Record<string, unknown>;
    try {
      body = requestFields(fields, values, item);
    } catch (error) {
      if (error instanceof FieldError) setErrors({ [error.field]: error.message });
      setFailure(errorText(error));
      return;
    }
    setSaving(true);
    try {
      if (item) {
        await api('/api/v1/catalog/update', { body: { item_laui: item.laui, ...(item.version ? { expected_version: item.version } : {}), ...body } });
        onSaved(item.laui);
      } else {
        const created = await api<{ item_laui: string }>('/api/v1/catalog/create', {
          body: { item_type: info.item_type, ...(parentLaui ? { parent_laui: parentLaui } : { is_root: true }), ...body },
        });
        onSaved(created.item_laui);
      }
    } catch (error) {
      setErrors(fieldErrorsOf(error, values));
      setFailure(error instanceof ApiError && error.status === 409 && item ? `${error.message} (someone else changed the item: reload it)` : errorText(error));
    } finally {
      setSaving(false);
    }
  };

  const control = (field: FieldSpec) => {
    const id = `${prefix}-${field.key}`;
    const describedBy = errors[field.key] ? `${id}-error` : field.pattern ? `${id}-hint` : undefined;
    const value = values[field.key];
    const common = { id, required: field.required, 'aria-required': field.required, 'aria-invalid': errors[field.key] ? true : undefined, 'aria-describedby': describedBy };
    switch (field.kind) {
      case 'textarea':
        return <textarea {...common} rows={2} value={String(value)} onChange={(event) => set(field.key, event.target.value)} />;
      case 'enum':
        return (
          <select {...common} value={String(value)} onChange={(event) => set(field.key, event.target.value)}>
            <option value="">—</option>
            {field.options?.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        );
      case 'boolean':
        return <input {...common} type="checkbox" checked={value === true} onChange={(event) => set(field.key, event.target.checked)} />;
      case 'integer':
      case 'number':
        return <input {...common} type="number" step={field.kind === 'integer' ? 1 : 'any'} value={String(value)} onChange={(event) => set(field.key, event.target.value)} />;
      case 'reference':
        return (
          <ReferenceSelect
            id={id}
            family={field.family ?? ''}
            types={types}
            value={String(value)}
            required={field.required}
            {...(describedBy ? { describedBy } : {})}
            onChange={(next) => set(field.key, next)}
          />
        );
      case 'code': {
        const block = value as CodeValue;
        return (
          <div className="code-field">
            <select aria-label={`${field.label} language`} value={block.language} onChange={(event) => set(field.key, { ...block, language: event.target.value })}>
              {codeLanguages(field.key).map((language) => (
                <option key={language} value={language}>
                  {language}
                </option>
              ))}
            </select>
            <LazyCodeEditor id={id} label={`${field.label} code`} language={block.language} value={block.code} onChange={(code) => set(field.key, { ...block, code })} />
          </div>
        );
      }
      case 'json':
        return <LazyCodeEditor id={id} label={`${field.label} (JSON)`} language="json" value={String(value)} onChange={(text) => set(field.key, text)} />;
      default:
        return (
          <input
            {...common}
            type="text"
            placeholder={field.kind === 'datetime' ? '2026-01-01T00:00:00Z' : undefined}
            autoComplete="off"
            value={String(value)}
            onChange={(event) => set(field.key, event.target.value)}
          />
        );
    }
  };

  return (
    <form className="item-form" aria-labelledby={headingId} onSubmit={(event) => void submit(event)} noValidate>
      <h3 id={headingId}>{item ? `Edit ${item.name}` : `New ${info.item_type}`}</h3>
      <p className="hint">{info.description}</p>
      {fields.map((field) => {
        const id = `${prefix}-${field.key}`;
        // Code and JSON editors are labelled by their own aria-label; the visible label names them too.
        const isEditor = field.kind === 'code' || field.kind === 'json';
        return (
          <div key={field.key} className={`field field-${field.kind}`}>
            {isEditor ? (
              <span className="label" id={`${id}-label`}>
                {field.label}
                {field.required ? <span aria-hidden="true"> *</span> : null}
              </span>
            ) : (
              <label htmlFor={id}>
                {field.label}
                {field.required ? <span aria-hidden="true"> *</span> : null}
              </label>
            )}
            {control(field)}
            {field.pattern && !errors[field.key] ? (
              <span className="hint" id={`${id}-hint`}>
                Must match {field.pattern}
              </span>
            ) : null}
            {errors[field.key] ? (
              <span className="field-error" id={`${id}-error`}>
                {errors[field.key]}
              </span>
            ) : null}
          </div>
        );
      })}
      {failure ? <Notice kind="error">{failure}</Notice> : null}
      <div className="actions">
        <button type="submit" className="primary" disabled={saving}>
          {saving ? 'Saving…' : item ? 'Save changes' : 'Create'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
};
