import type { Json } from '../model/json';
import { isJsonObject } from '../model/json';
import { mapList } from '../model/lists';

/**
 * JSON that CFEngine 3.21's `readjson` reads back exactly, pretty and with sorted keys (as
 * `JSON.stringify(value, null, 2)` lays it out). `readjson` decodes a string's backslash escapes
 * twice (`\\n` in the file arrives as a newline) and does not decode `\uXXXX` at all, so:
 * a backslash is written as two escaped backslashes, `"` and the five control characters with a
 * short escape (`\b \f \n \r \t`) are escaped once, and every other character, other control
 * characters included, is written as itself (UTF-8): the agent reads each one as it is.
 */
export function agentJson(value: Json): string {
  return write(value, '');
}

function write(value: Json, indent: string): string {
  if (typeof value === 'string') return agentString(value);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const inner = `${indent}  `;
    return `[\n${mapList(value, (item) => inner + write(item, inner)).join(',\n')}\n${indent}]`;
  }
  if (isJsonObject(value)) {
    const keys = Object.keys(value).sort();
    if (keys.length === 0) return '{}';
    const inner = `${indent}  `;
    const members = mapList(
      keys,
      (key) => `${inner}${agentString(key)}: ${write(value[key] as Json, inner)}`,
    );
    return `{\n${members.join(',\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  '\\': '\\\\\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

function agentString(text: string): string {
  return `"${text.replace(/["\\\b\f\n\r\t]/g, (character) => ESCAPES[character] as string)}"`;
}
