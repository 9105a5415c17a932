// Modules svc imports by a path their packages publish without type declarations.

declare module 'pg/lib/utils.js' {
  /** pg's conversion of a query parameter to the text it sends (arrays, dates, objects, buffers). */
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}

declare module 'libpg-query/wasm/libpg-query.js' {
  /** The Emscripten module factory of libpg_query's WASM build; `wasmBinary` spares it reading libpg-query.wasm from its folder. */
  const factory: (options?: { wasmBinary?: Uint8Array }) => Promise<unknown>;
  export default factory;
}
