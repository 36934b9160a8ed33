declare module 'parse-prometheus-text-format' {
  interface ParsedFamily {
    readonly name: string;
    readonly help: string;
    readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
    readonly metrics: readonly {
      readonly labels?: Readonly<Record<string, string>>;
      readonly value?: string;
      readonly buckets?: Readonly<Record<string, string>>;
      readonly count?: string;
      readonly sum?: string;
    }[];
  }
  function parsePrometheusTextFormat(text: string): ParsedFamily[];
  export default parsePrometheusTextFormat;
}
