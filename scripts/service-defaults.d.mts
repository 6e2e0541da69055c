export declare const SERVICE_NODE_FLAGS: readonly string[];
export declare const SERVICE_ENV: Readonly<Record<string, string>>;
export declare function serviceNodeFlags(nodeOptions?: string): string[];
