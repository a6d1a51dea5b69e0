// Expressions as text, for the `expression` field of TYPE_MISMATCH and UNNAMED_EXPRESSION.
// The tree keeps no end offsets, so the text is rebuilt with the fewest parentheses that
// keep its grouping: `avg(x) / 2`, not the spacing or quotes the user happened to type.

import type { Expr } from '../expression/index.js';

// Binding strength, loosest first, as docs/query-language.md ("Expressions") orders it.
const LEVEL_OR = 1;
const LEVEL_AND = 2;
const LEVEL_NOT = 3;
const LEVEL_COMPARISON = 4;
const LEVEL_ADDITIVE = 5;
const LEVEL_MULTIPLICATIVE = 6;
const LEVEL_NEGATION = 7;
const LEVEL_PRIMARY = 8;

/** The expression as query text that parses back to the same tree. */
export function formatExpression(expr: Expr): string {
  return format(expr, 0);
}

function format(expr: Expr, required: number): string {
  const [text, level] = formatNode(expr);
  return level < required ? `(${text})` : text;
}

function formatNode(expr: Expr): [string, number] {
  switch (expr.kind) {
    case 'literal':
      return [formatLiteral(expr.value, expr.numericKind), LEVEL_PRIMARY];
    case 'field':
      return [expr.path.join('.'), LEVEL_PRIMARY];
    case 'variable':
      return [`@${expr.name}`, LEVEL_PRIMARY];
    case 'call':
      return [`${expr.name}(${expr.args.map((arg) => format(arg, 0)).join(', ')})`, LEVEL_PRIMARY];
    case 'unary':
      return expr.operator === '!'
        ? [`!${format(expr.operand, LEVEL_NOT)}`, LEVEL_NOT]
        : [`-${format(expr.operand, LEVEL_NEGATION)}`, LEVEL_NEGATION];
    case 'binary': {
      const level = '*/%'.includes(expr.operator)
        ? LEVEL_MULTIPLICATIVE
        : '+-'.includes(expr.operator)
          ? LEVEL_ADDITIVE
          : LEVEL_COMPARISON;
      // Left to right: a right operand of equal strength needs parentheses, a left one not.
      return [`${format(expr.left, level)} ${expr.operator} ${format(expr.right, level + 1)}`, level];
    }
    case 'logical': {
      const level = expr.operator === '&&' ? LEVEL_AND : LEVEL_OR;
      return [expr.operands.map((operand) => format(operand, level + 1)).join(` ${expr.operator} `), level];
    }
  }
}

function formatLiteral(value: null | boolean | number | bigint | string, numericKind: 'int' | 'double' | undefined): string {
  if (typeof value === 'string') return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
  // A double written `2.0` must not come back as the integer 2 (integer division differs).
  if (typeof value === 'number' && numericKind === 'double' && Number.isInteger(value)) return value.toFixed(1);
  return String(value);
}
