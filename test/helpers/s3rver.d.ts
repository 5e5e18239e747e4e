// The part of s3rver (an S3-compatible server for tests; it ships no types) that the tests use.
declare module "s3rver" {
  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory: string;
    configureBuckets?: { name: string; configs: string[] }[];
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    /** Koa's middleware list (s3rver is a Koa application): composed when the server starts listening. */
    middleware: unknown[];
    run(): Promise<unknown>;
    close(): Promise<void>;
  }
}
