import { mapList } from './lists';
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isJsonObject(value: Json | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** JSON with object keys sorted: the one serialisation used for hashing and comparing values. */
export function canonicalJson(value: Json): string {
  if (Array.isArray(value)) return `[${mapList(value, canonicalJson).join(',')}]`;
  if (isJsonObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${mapList(keys, (key) => `${JSON.stringify(key)}:${canonicalJson(value[key] as Json)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function jsonEqual(a: Json, b: Json): boolean {
  return canonicalJson(a) === canonicalJson(b);
}
