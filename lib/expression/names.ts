/**
 * The names the language knows, shared by the parser (which refuses anything else at rule-create time) and
 * the evaluator (which checks again for computed keys and for the type of the value a method is called on).
 */

/**
 * Built-in helper functions, callable as `name(args)`. `now()` reads the engine's clock given with the scope
 * (never the host's), so a result is the same for the same input and the same clock on every engine instance.
 */
export const HELPER_NAMES: ReadonlySet<string> = new Set([
  'lower',
  'upper',
  'trim',
  'split',
  'join',
  'replace',
  'substring',
  'padStart',
  'coalesce',
  'isEmpty',
  'first',
  'last',
  'formatDate',
  'toNumber',
  'toString',
  'left',
  'right',
  'dnEscape',
  'dnParent',
  'dnRdnValue',
  'now',
  'date',
  'addDays',
  'addHours',
  'addMinutes',
  'startOfDay',
  'endOfDay',
  'atTime',
]);

/** [minimum, maximum] argument counts of each helper, checked at parse time. */
export const HELPER_ARITY: ReadonlyMap<string, readonly [number, number]> = new Map<string, readonly [number, number]>([
  ['lower', [1, 1]],
  ['upper', [1, 1]],
  ['trim', [1, 1]],
  ['split', [2, 2]],
  ['join', [1, 2]],
  ['replace', [3, 3]],
  ['substring', [2, 3]],
  ['padStart', [2, 3]],
  ['coalesce', [1, Infinity]],
  ['isEmpty', [1, 1]],
  ['first', [1, 1]],
  ['last', [1, 1]],
  ['formatDate', [2, 3]],
  ['toNumber', [1, 1]],
  ['toString', [1, 1]],
  ['left', [2, 2]],
  ['right', [2, 2]],
  ['dnEscape', [1, 1]],
  ['dnParent', [1, 1]],
  ['dnRdnValue', [1, 1]],
  ['now', [0, 0]],
  ['date', [1, 2]],
  ['addDays', [2, 3]],
  ['addHours', [2, 2]],
  ['addMinutes', [2, 2]],
  ['startOfDay', [1, 2]],
  ['endOfDay', [1, 2]],
  ['atTime', [2, 3]],
]);

/** The argument (0-based) of each helper that names a time zone: a literal one is checked when the script is saved. */
export const ZONE_ARGUMENTS: ReadonlyMap<string, number> = new Map([
  ['date', 1],
  ['addDays', 2],
  ['startOfDay', 1],
  ['endOfDay', 1],
  ['atTime', 2],
  ['formatDate', 2],
]);

/** [minimum, maximum] argument counts of each method name, over every type that has it; checked at parse time. */
export const METHOD_ARITY: ReadonlyMap<string, readonly [number, number]> = new Map<string, readonly [number, number]>([
  ['toLowerCase', [0, 0]],
  ['toUpperCase', [0, 0]],
  ['trim', [0, 0]],
  ['trimStart', [0, 0]],
  ['trimEnd', [0, 0]],
  ['split', [0, 2]],
  ['substring', [1, 2]],
  ['slice', [0, 2]],
  ['indexOf', [1, 2]],
  ['includes', [1, 2]],
  ['startsWith', [1, 2]],
  ['endsWith', [1, 2]],
  ['replace', [2, 2]],
  ['replaceAll', [2, 2]],
  ['padStart', [1, 2]],
  ['padEnd', [1, 2]],
  ['charAt', [0, 1]],
  ['concat', [0, Infinity]],
  ['repeat', [1, 1]],
  ['toString', [0, 1]],
  ['join', [0, 1]],
  ['toFixed', [0, 1]],
]);

export const STRING_METHOD_NAMES: ReadonlySet<string> = new Set([
  'toLowerCase',
  'toUpperCase',
  'trim',
  'trimStart',
  'trimEnd',
  'split',
  'substring',
  'slice',
  'indexOf',
  'includes',
  'startsWith',
  'endsWith',
  'replace',
  'replaceAll',
  'padStart',
  'padEnd',
  'charAt',
  'concat',
  'repeat',
  'toString',
]);

export const ARRAY_METHOD_NAMES: ReadonlySet<string> = new Set(['join', 'includes', 'indexOf', 'slice', 'concat', 'toString']);

export const NUMBER_METHOD_NAMES: ReadonlySet<string> = new Set(['toFixed', 'toString']);

export const BOOLEAN_METHOD_NAMES: ReadonlySet<string> = new Set(['toString']);

/** Every method name callable on some type: a call of any other name is a syntax error. */
export const METHOD_NAMES: ReadonlySet<string> = new Set([...STRING_METHOD_NAMES, ...ARRAY_METHOD_NAMES, ...NUMBER_METHOD_NAMES, ...BOOLEAN_METHOD_NAMES]);

/**
 * Property names refused everywhere, even as own properties (JSON.parse makes `__proto__` an own property):
 * they are the doors to prototypes and constructors.
 */
export const FORBIDDEN_PROPERTIES: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
  '__defineGetter__',
  '__defineSetter__',
  '__lookupGetter__',
  '__lookupSetter__',
]);

/**
 * Identifiers refused at parse time although the scope could in theory define them: they name host globals,
 * so a script using them is an attempt to escape, and the admin learns it when the rule is created.
 */
export const RESERVED_IDENTIFIERS: ReadonlySet<string> = new Set([
  'globalThis',
  'global',
  'window',
  'self',
  'process',
  'require',
  'module',
  'exports',
  'Function',
  'eval',
  'arguments',
  'Reflect',
  'Proxy',
  'Object',
  'Symbol',
  'Buffer',
  'constructor',
  'prototype',
  '__proto__',
  'setTimeout',
  'setInterval',
  'setImmediate',
  'queueMicrotask',
  'WebAssembly',
  'Atomics',
  'SharedArrayBuffer',
]);

/** JavaScript keywords the language does not support, with the message the parser gives for each. */
export const UNSUPPORTED_KEYWORDS: ReadonlyMap<string, string> = new Map([
  ['this', "'this' is not available"],
  ['new', "'new' is not allowed"],
  ['function', 'Function literals are not allowed'],
  ['class', 'Classes are not allowed'],
  ['var', 'Declarations are not allowed'],
  ['let', 'Declarations are not allowed'],
  ['const', 'Declarations are not allowed'],
  ['return', "'return' is not allowed"],
  ['delete', "'delete' is not allowed"],
  ['void', "'void' is not allowed"],
  ['in', "'in' is not allowed"],
  ['instanceof', "'instanceof' is not allowed"],
  ['yield', "'yield' is not allowed"],
  ['await', "'await' is not allowed"],
  ['async', "'async' is not allowed"],
  ['import', "'import' is not allowed"],
  ['export', "'export' is not allowed"],
  ['super', "'super' is not allowed"],
  ['with', "'with' is not allowed"],
  ['if', 'Statements are not allowed'],
  ['else', 'Statements are not allowed'],
  ['for', 'Statements are not allowed'],
  ['while', 'Statements are not allowed'],
  ['do', 'Statements are not allowed'],
  ['switch', 'Statements are not allowed'],
  ['case', 'Statements are not allowed'],
  ['default', 'Statements are not allowed'],
  ['break', 'Statements are not allowed'],
  ['continue', 'Statements are not allowed'],
  ['throw', 'Statements are not allowed'],
  ['try', 'Statements are not allowed'],
  ['catch', 'Statements are not allowed'],
  ['finally', 'Statements are not allowed'],
  ['debugger', 'Statements are not allowed'],
  ['enum', "'enum' is not allowed"],
]);
