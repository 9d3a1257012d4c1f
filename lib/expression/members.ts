import type { Expression } from './ast';
import { children } from './parser';

/**
 * The properties a script reads of one name of its scope: `object.title`, `object?.mail` and
 * `object['employeeID']` name `title`, `mail` and `employeeID`. Null when the script uses the name in any
 * other way (`object[key]` with a computed key, `object` passed to a helper or returned whole): then any
 * property may be read. A script that never names it reads none (an empty set).
 */
export function memberNames(ast: Expression, name: string): Set<string> | null {
  const found = new Set<string>();
  const stack: Expression[] = [ast];
  while (stack.length) {
    const node = stack.pop() as Expression;
    if (node.type === 'Identifier') {
      if (node.name === name) return null;
      continue;
    }
    if (node.type === 'UnaryExpression' && node.operator === 'typeof' && node.argument.type === 'Identifier') continue;
    if (node.type === 'MemberExpression' && node.object.type === 'Identifier' && node.object.name === name) {
      if (!node.computed && node.name !== undefined) {
        found.add(node.name);
        continue;
      }
      if (node.property?.type === 'Literal' && typeof node.property.value === 'string') {
        found.add(node.property.value);
        continue;
      }
      return null;
    }
    stack.push(...children(node));
  }
  return found;
}
