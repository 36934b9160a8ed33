const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export type PathSegment = string | number;

/** `$.directives[2].parameters["odd key"]`: the path notation of every report. */
export function formatJsonPath(segments: readonly PathSegment[]): string {
  let path = '$';
  for (const segment of segments) {
    if (typeof segment === 'number') path += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) path += `.${segment}`;
    else path += `[${JSON.stringify(segment)}]`;
  }
  return path;
}
