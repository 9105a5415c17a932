// What caller SQL may call and cast to on the Postgres provider (the parser layer, subset.ts).
// docs/data.md ("The SQL subset on PostgreSQL") lists the same names, and test/unit/pg-subset.test.ts keeps the two
// equal. A function is here only if it reads nothing but its arguments (no table, no catalog, no
// setting, no other session), changes nothing (no sequence, no large object, no lock, no setting, no
// notification), and cannot run SQL given as text. Anything not listed is refused, so a function
// Postgres adds later is refused until it is added here. Names are matched exactly as Postgres reads
// them after folding (`NOW()` is now, `"NOW"()` is not a function), unqualified or qualified by
// pg_catalog only.

/** The allowed functions, by kind (the doc's table, in this order). */
export const PG_FUNCTIONS = {
  aggregate: [
    'any_value', 'array_agg', 'avg', 'bit_and', 'bit_or', 'bit_xor', 'bool_and', 'bool_or', 'corr', 'count', 'covar_pop', 'covar_samp', 'every', 'json_agg',
    'json_agg_strict', 'json_object_agg', 'json_object_agg_strict', 'json_object_agg_unique', 'json_object_agg_unique_strict', 'jsonb_agg', 'jsonb_agg_strict',
    'jsonb_object_agg', 'jsonb_object_agg_strict', 'jsonb_object_agg_unique', 'jsonb_object_agg_unique_strict', 'max', 'min', 'mode', 'percentile_cont',
    'percentile_disc', 'regr_avgx', 'regr_avgy', 'regr_count', 'regr_intercept', 'regr_r2', 'regr_slope', 'regr_sxx', 'regr_sxy', 'regr_syy', 'stddev',
    'stddev_pop', 'stddev_samp', 'string_agg', 'sum', 'var_pop', 'var_samp', 'variance',
  ],
  window: ['cume_dist', 'dense_rank', 'first_value', 'lag', 'last_value', 'lead', 'nth_value', 'ntile', 'percent_rank', 'rank', 'row_number'],
  comparison: ['num_nonnulls', 'num_nulls'],
  math: [
    'abs', 'acos', 'acosd', 'acosh', 'asin', 'asind', 'asinh', 'atan', 'atan2', 'atan2d', 'atand', 'atanh', 'cbrt', 'ceil', 'ceiling', 'cos', 'cosd', 'cosh',
    'cot', 'cotd', 'degrees', 'div', 'erf', 'erfc', 'exp', 'factorial', 'floor', 'gcd', 'lcm', 'ln', 'log', 'log10', 'min_scale', 'mod', 'pi', 'pow', 'power',
    'radians', 'random', 'random_normal', 'round', 'scale', 'sign', 'sin', 'sind', 'sinh', 'sqrt', 'tan', 'tand', 'tanh', 'trim_scale', 'trunc', 'width_bucket',
  ],
  string: [
    'ascii', 'bit_length', 'btrim', 'char_length', 'character_length', 'chr', 'concat', 'concat_ws', 'decode', 'encode', 'format', 'initcap', 'left', 'length',
    'like_escape', 'lower', 'lpad', 'ltrim', 'md5', 'normalize', 'is_normalized', 'octet_length', 'overlay', 'position', 'quote_ident', 'quote_literal',
    'quote_nullable', 'regexp_count', 'regexp_instr', 'regexp_like', 'regexp_match', 'regexp_matches', 'regexp_replace', 'regexp_split_to_array',
    'regexp_split_to_table', 'regexp_substr', 'repeat', 'replace', 'reverse', 'right', 'rpad', 'rtrim', 'sha224', 'sha256', 'sha384', 'sha512',
    'similar_to_escape', 'split_part', 'starts_with', 'string_to_array', 'string_to_table', 'strpos', 'substr', 'substring', 'to_char', 'to_hex',
    'to_number', 'translate', 'unistr', 'upper',
  ],
  textSearch: ['phraseto_tsquery', 'plainto_tsquery', 'to_tsquery', 'to_tsvector', 'ts_headline', 'ts_rank', 'ts_rank_cd', 'websearch_to_tsquery'],
  dateTime: [
    'age', 'clock_timestamp', 'date_add', 'date_bin', 'date_part', 'date_subtract', 'date_trunc', 'extract', 'isfinite', 'justify_days', 'justify_hours',
    'justify_interval', 'make_date', 'make_interval', 'make_time', 'make_timestamp', 'make_timestamptz', 'now', 'overlaps', 'statement_timestamp', 'timeofday',
    'timezone', 'to_date', 'to_timestamp', 'transaction_timestamp',
  ],
  json: [
    'array_to_json', 'json_array_elements', 'json_array_elements_text', 'json_array_length', 'json_build_array', 'json_build_object', 'json_each',
    'json_each_text', 'json_extract_path', 'json_extract_path_text', 'json_object', 'json_object_keys', 'json_strip_nulls', 'json_to_record',
    'json_to_recordset', 'json_typeof', 'jsonb_array_elements', 'jsonb_array_elements_text', 'jsonb_array_length', 'jsonb_build_array', 'jsonb_build_object',
    'jsonb_each', 'jsonb_each_text', 'jsonb_extract_path', 'jsonb_extract_path_text', 'jsonb_insert', 'jsonb_object', 'jsonb_object_keys', 'jsonb_path_exists',
    'jsonb_path_match', 'jsonb_path_query', 'jsonb_path_query_array', 'jsonb_path_query_first', 'jsonb_pretty', 'jsonb_set', 'jsonb_set_lax',
    'jsonb_strip_nulls', 'jsonb_to_record', 'jsonb_to_recordset', 'jsonb_typeof', 'row_to_json', 'to_json', 'to_jsonb',
  ],
  array: [
    'array_append', 'array_cat', 'array_dims', 'array_fill', 'array_length', 'array_lower', 'array_ndims', 'array_position', 'array_positions',
    'array_prepend', 'array_remove', 'array_replace', 'array_to_string', 'array_upper', 'cardinality', 'generate_series', 'generate_subscripts',
    'trim_array', 'unnest',
  ],
  uuid: ['gen_random_uuid', 'uuid_extract_timestamp', 'uuid_extract_version'],
  // Waiting changes nothing and reads nothing; statement_timeout ends it like any slow statement
  // (503, nothing kept), which the hostile table tests.
  delay: ['pg_sleep', 'pg_sleep_for'],
} as const satisfies Record<string, readonly string[]>;

export type PgFunctionKind = keyof typeof PG_FUNCTIONS;

/** Every allowed function name. */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set(Object.values(PG_FUNCTIONS).flat());

/**
 * Functions of pg_catalog that PostgreSQL will call with a whole row as their only argument (those
 * taking record, "any", anyelement, anycompatible, anynonarray or a variadic list): in `t.name`,
 * when table t has no column `name`, PostgreSQL calls `name(t)` (attribute notation). So such a
 * name after a table is refused unless it is allowed anyway. Taken from pg_proc of PostgreSQL 15,
 * plus pg_column_toast_chunk_id (17); none of them has a side effect. (Calling a function on a
 * scalar, `(x).name`, is checked against ALLOWED_FUNCTIONS itself.)
 */
export const ROW_CALLABLE: ReadonlySet<string> = new Set([
  'any_out', 'anycompatible_out', 'anycompatiblenonarray_out', 'anyelement_out', 'anynonarray_out', 'array_agg', 'concat', 'count', 'cume_dist',
  'datemultirange', 'dense_rank', 'first_value', 'hash_record', 'int4multirange', 'int8multirange', 'json_agg', 'json_build_array', 'json_build_object',
  'jsonb_agg', 'jsonb_build_array', 'jsonb_build_object', 'lag', 'last_value', 'lead', 'mode', 'num_nonnulls', 'num_nulls', 'nummultirange', 'percent_rank',
  'pg_collation_for', 'pg_column_compression', 'pg_column_size', 'pg_column_toast_chunk_id', 'pg_typeof', 'quote_literal', 'quote_nullable', 'rank',
  'record_out', 'record_send', 'row_to_json', 'to_json', 'to_jsonb', 'tsmultirange', 'tstzmultirange', 'any_value',
]);

/**
 * Types a cast (`x::t`, `CAST(x AS t)`, `t 'literal'`, a column definition list) may name, with or
 * without `[]`, unqualified or qualified by pg_catalog. These are the names the parser gives: the
 * SQL spellings fold to them (`integer`/`int` → int4, `double precision` → float8, `timestamp with
 * time zone` → timestamptz, `character varying` → varchar, `boolean` → bool).
 */
export const ALLOWED_TYPES: ReadonlySet<string> = new Set([
  'bool', 'int2', 'int4', 'int8', 'numeric', 'float4', 'float8', 'text', 'varchar', 'bpchar', 'date', 'time', 'timetz', 'timestamp', 'timestamptz', 'interval',
  'uuid', 'json', 'jsonb', 'jsonpath', 'bytea', 'tsvector', 'tsquery',
]);

/**
 * Types whose input looks a name up in the system catalogs ('pg_authid'::regclass is that table's
 * oid, and the oid cast back to text names it): a cast to one reads a catalog, so it is refused on
 * purpose (403), not merely as outside the subset. Every type whose name starts with reg.
 */
export const CATALOG_TYPE = /^reg/;

/** SQL-standard value keywords (SQLValueFunction): the clock ones are allowed, the ones naming the session's role, database or schema are not. */
export const ALLOWED_VALUE_KEYWORDS: Readonly<Record<string, string>> = {
  SVFOP_CURRENT_DATE: 'CURRENT_DATE',
  SVFOP_CURRENT_TIME: 'CURRENT_TIME',
  SVFOP_CURRENT_TIME_N: 'CURRENT_TIME',
  SVFOP_CURRENT_TIMESTAMP: 'CURRENT_TIMESTAMP',
  SVFOP_CURRENT_TIMESTAMP_N: 'CURRENT_TIMESTAMP',
  SVFOP_LOCALTIME: 'LOCALTIME',
  SVFOP_LOCALTIME_N: 'LOCALTIME',
  SVFOP_LOCALTIMESTAMP: 'LOCALTIMESTAMP',
  SVFOP_LOCALTIMESTAMP_N: 'LOCALTIMESTAMP',
};
