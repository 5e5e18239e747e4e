export interface paths {
    "/v1/agents/sandboxes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List your sandboxes (filter: ?state=running&metadata.KEY=VALUE, keys AND-ed) */
        get: {
            parameters: {
                query?: {
                    /** @description Page size (1..1000, default 100) */
                    limit?: string;
                    /** @description Items to skip (default 0) */
                    offset?: string;
                    /** @description Only sandboxes in this state */
                    state?: "running" | "paused" | "terminated" | "timed_out" | "failed";
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            sandboxes: components["schemas"]["Sandbox"][];
                            total: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        /** Create a sandbox */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Template id (default python-base-v1) */
                        template?: string;
                        /** @description Seconds the sandbox lives (default 300) */
                        timeout?: number;
                        env_vars?: {
                            [key: string]: string;
                        };
                        metadata?: {
                            [key: string]: unknown;
                        };
                        /** @description Egress through the service's proxy to any public address (default false: none) */
                        internet_access?: boolean;
                        network?: {
                            /** @description Reachable destinations; when set, only these: domain names (pypi.org, *.github.com for any subdomain), IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) */
                            allow_out?: string[];
                            /** @description Refused destinations (deny wins): domain names (pypi.org, *.github.com for any subdomain), IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) */
                            deny_out?: string[];
                        };
                        /** @description Accepted for compatibility and ignored */
                        provider?: string;
                        /** @description Accepted for compatibility and ignored */
                        region?: string;
                        /** @description Start from this snapshot: its files and settings (kernel state is lost) */
                        snapshot_id?: string;
                        lifecycle?: {
                            /** @description What happens when the sandbox's life runs out: end it (default), pause it, or snapshot its files and end it */
                            on_timeout?: "kill" | "pause" | "snapshot";
                        };
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            sandbox_id: string;
                            status: "running" | "paused" | "terminated" | "timed_out" | "failed";
                            template: string;
                            template_id: string;
                            /** Format: date-time */
                            started_at: string;
                            /** Format: date-time */
                            timeout_at: string;
                            cpu_count: number;
                            memory_mb: number;
                            metadata: {
                                [key: string]: unknown;
                            };
                            /** Format: date-time */
                            ended_at: string | null;
                            /** @description Whether the sandbox's memory and running kernels were kept (pause/resume) or only its files (snapshots, forks) */
                            kernel_state?: "preserved" | "lost";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                507: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a sandbox */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["Sandbox"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Kill a sandbox: every process ends, its files are removed */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            sandbox_id: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/timeout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Set the sandbox's remaining life */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Seconds from now */
                        timeout: number;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            timeout: number;
                            /** Format: date-time */
                            timeout_at: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/templates": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List templates */
        get: {
            parameters: {
                query?: {
                    /** @description Page size (1..1000, default 100) */
                    limit?: string;
                    /** @description Items to skip (default 0) */
                    offset?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            templates: {
                                id: string;
                                name: string;
                                description: string;
                                vcpu_count: number;
                                memory_mb: number;
                                disk_size_mb: number;
                                visibility: string;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                            limit: number;
                            offset: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Pause a sandbox: every process frozen, memory kept, no CPU used, its life clock stopped */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            sandbox_id: string;
                            status: string;
                            /** Format: date-time */
                            timeout_at: string;
                            /** @description Whether the sandbox's memory and running kernels were kept (pause/resume) or only its files (snapshots, forks) */
                            kernel_state: "preserved" | "lost";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                500: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resume a paused sandbox where it stopped (its deadline moves on by the time it was paused) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            sandbox_id: string;
                            status: string;
                            /** Format: date-time */
                            timeout_at: string;
                            /** @description Whether the sandbox's memory and running kernels were kept (pause/resume) or only its files (snapshots, forks) */
                            kernel_state: "preserved" | "lost";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                500: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/snapshots": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Snapshot the sandbox's /home/user and settings (written atomically and verified) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            snapshot_id: string;
                            /** @description The sandbox it was taken of */
                            sandbox_id: string;
                            /** @description manual: asked for; timeout: on_timeout snapshot; hibernate: a sandbox paused past the operator's limit */
                            kind: "manual" | "timeout" | "hibernate";
                            /** Format: date-time */
                            created_at: string;
                            /** @description Size of the archive (a tar of /home/user) */
                            size_bytes: number;
                            /** @description Entries in the archive (files, directories, links) */
                            files: number;
                            /** @description SHA-256 of the archive, checked after it was written and before every restore */
                            sha256: string;
                            template: string;
                            metadata: {
                                [key: string]: unknown;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                500: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                507: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/fork": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Make copies of a sandbox (its files and settings; kernel state is lost) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Copies to make (default 1; at most AGENTBOX_MAX_FORK_COUNT) */
                        count?: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            sandboxes: components["schemas"]["Sandbox"][];
                            /** @description Whether the sandbox's memory and running kernels were kept (pause/resume) or only its files (snapshots, forks) */
                            kernel_state: "preserved" | "lost";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                500: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                507: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/snapshots": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List your snapshots */
        get: {
            parameters: {
                query?: {
                    /** @description Page size (1..1000, default 100) */
                    limit?: string;
                    /** @description Items to skip (default 0) */
                    offset?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            snapshots: {
                                snapshot_id: string;
                                /** @description The sandbox it was taken of */
                                sandbox_id: string;
                                /** @description manual: asked for; timeout: on_timeout snapshot; hibernate: a sandbox paused past the operator's limit */
                                kind: "manual" | "timeout" | "hibernate";
                                /** Format: date-time */
                                created_at: string;
                                /** @description Size of the archive (a tar of /home/user) */
                                size_bytes: number;
                                /** @description Entries in the archive (files, directories, links) */
                                files: number;
                                /** @description SHA-256 of the archive, checked after it was written and before every restore */
                                sha256: string;
                                template: string;
                                metadata: {
                                    [key: string]: unknown;
                                };
                            }[];
                            total: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/snapshots/{snapshot_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a snapshot */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    snapshot_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            snapshot_id: string;
                            /** @description The sandbox it was taken of */
                            sandbox_id: string;
                            /** @description manual: asked for; timeout: on_timeout snapshot; hibernate: a sandbox paused past the operator's limit */
                            kind: "manual" | "timeout" | "hibernate";
                            /** Format: date-time */
                            created_at: string;
                            /** @description Size of the archive (a tar of /home/user) */
                            size_bytes: number;
                            /** @description Entries in the archive (files, directories, links) */
                            files: number;
                            /** @description SHA-256 of the archive, checked after it was written and before every restore */
                            sha256: string;
                            template: string;
                            metadata: {
                                [key: string]: unknown;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Delete a snapshot (its archive is removed) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    snapshot_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            snapshot_id: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A sandbox's lifecycle events, oldest first (kept for a while after it ended) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description created, paused, resumed, snapshotted, timeout_extended, ended */
                            type: "created" | "paused" | "resumed" | "snapshotted" | "timeout_extended" | "ended";
                            /** Format: date-time */
                            at: string;
                            /** @description For `ended`: killed, timed_out, oom, error, host_restart or node_lost (its node left a cluster); null for other events */
                            reason: string | null;
                            /** @description Context, e.g. `by` (api or operator) of a kill */
                            detail: {
                                [key: string]: unknown;
                            };
                        }[];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List your webhooks */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            webhooks: {
                                id: string;
                                url: string;
                                events: ("created" | "paused" | "resumed" | "snapshotted" | "timeout_extended" | "ended")[];
                                /** Format: date-time */
                                created_at: string;
                                /** @description Only in the create response, and only when the service generated it */
                                secret?: string;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        /** Register a webhook: lifecycle events are POSTed to it, signed (X-AgentBox-Signature) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description http(s) URL that receives the events */
                        url: string;
                        /** @description Events to deliver: created, paused, resumed, snapshotted, timeout_extended, ended */
                        events: string[];
                        /** @description HMAC key of the signature (16..256 characters); generated and returned once if left out */
                        secret?: string;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            url: string;
                            events: ("created" | "paused" | "resumed" | "snapshotted" | "timeout_extended" | "ended")[];
                            /** Format: date-time */
                            created_at: string;
                            /** @description Only in the create response, and only when the service generated it */
                            secret?: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/webhooks/{webhook_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Delete a webhook (its pending deliveries are dropped) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    webhook_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            id: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/webhooks/{webhook_id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A webhook's deliveries, newest first, each with its attempts */
        get: {
            parameters: {
                query?: {
                    /** @description Newest deliveries to show (1..500, default 100) */
                    limit?: string;
                };
                header?: never;
                path: {
                    webhook_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            deliveries: {
                                id: string;
                                /** @description created, paused, resumed, snapshotted, timeout_extended, ended */
                                event: "created" | "paused" | "resumed" | "snapshotted" | "timeout_extended" | "ended";
                                status: "pending" | "delivered" | "failed";
                                attempts: number;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                next_attempt_at: string | null;
                                attempt_log: {
                                    /** Format: date-time */
                                    at: string;
                                    status_code: number | null;
                                    error: string | null;
                                    duration_ms: number;
                                }[];
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/code/run": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run code in a sandbox
         * @description Runs code in the sandbox's persistent kernel for the language (state persists between runs). A failing program is still a 200: its error is in `error`. With `stream: true` (or `?stream=true`, or `Accept: text/event-stream`) the answer is text/event-stream: `stdout` and `stderr` events ({text}) as produced, `result` events (one rich result each), and a final `end` whose data is the answer below (or an error envelope). Closing the connection interrupts the run (a python kernel keeps its state).
         */
        post: {
            parameters: {
                query?: {
                    /** @description Answer with server-sent events (text/event-stream) */
                    stream?: "true" | "false" | "1" | "0";
                };
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description The code to execute */
                        code: string;
                        /**
                         * @description Language of the code
                         * @enum {string}
                         */
                        language: "python" | "javascript" | "typescript" | "bash";
                        /** @description Execution timeout in seconds (default 30) */
                        timeout?: number;
                        /** @description Run in this code context's kernel */
                        context_id?: string;
                        environment?: {
                            [key: string]: string;
                        };
                        /** @description Answer with server-sent events (text/event-stream): `stdout`/`stderr` ({text}) as produced, `result` (one rich result), then `end` with the whole answer. Same as `?stream=true` or `Accept: text/event-stream`. */
                        stream?: boolean;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["CodeRunResult"];
                        "text/event-stream": string;
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/commands/run": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run a shell command in a sandbox
         * @description Runs `command` (plus `args`, each shell-quoted) with `bash -c` as a fresh process in the sandbox, in `working_dir` (default /home/user). A non-zero exit is still a 200: see `exit_code`, `success` and `error`. Processes it starts in the background keep running until the sandbox ends. With `background: true` the command itself is a background process: the answer is {pid, command, args, started_at} at once. With `stream: true` (or `?stream=true`, or `Accept: text/event-stream`) the answer is text/event-stream: `stdout` and `stderr` events ({text}) as produced, then `end` with the answer below; closing the connection kills the command.
         */
        post: {
            parameters: {
                query?: {
                    /** @description Answer with server-sent events (text/event-stream) */
                    stream?: "true" | "false" | "1" | "0";
                };
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Shell command line, run with `bash -c` */
                        command: string;
                        /** @description Arguments appended to `command`, each shell-quoted */
                        args?: string[] | null;
                        /** @description Directory to run in (default /home/user) */
                        working_dir?: string | null;
                        /** @description Extra environment variables for this command only */
                        environment?: {
                            [key: string]: string;
                        } | null;
                        /** @description Milliseconds before the command is killed (default 30000) */
                        timeout?: number | null;
                        /** @description Answer with server-sent events: `stdout`/`stderr` ({text}) as produced, then `end` with the whole answer. Same as `?stream=true` or `Accept: text/event-stream`. */
                        stream?: boolean;
                        /** @description Start the command as a background process and answer at once with {pid, command, args, started_at}; see GET /sandboxes/{id}/commands. `timeout` does not apply. */
                        background?: boolean;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            stdout: string;
                            stderr: string;
                            /** @description The process's exit status; 128+N when killed by signal N; 127 for an unknown program */
                            exit_code: number;
                            duration_ms: number;
                            /** @description exit_code is 0 and nothing went wrong */
                            success: boolean;
                            /** @description null on success, else why not: `exit status N`, a timeout, a signal, truncated output */
                            error: string | null;
                        } | {
                            pid: number;
                            command: string;
                            args: string[];
                            /** Format: date-time */
                            started_at: string;
                        };
                        "text/event-stream": string;
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/commands": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List background processes
         * @description Background processes started with commands/run `background: true`, running and recently exited, in start order.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            commands: {
                                /** @description The pid in the sandbox */
                                pid: number;
                                command: string;
                                args: string[];
                                status: "running" | "exited";
                                /** @description null while running; 128+N when ended by signal N */
                                exit_code: number | null;
                                /** Format: date-time */
                                started_at: string;
                                /** Format: date-time */
                                ended_at: string | null;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/commands/{pid}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a background process and its output so far
         * @description The process and the latest output of each stream (retained up to AGENTBOX_BACKGROUND_OUTPUT_BYTES per stream, 1 MiB by default; `*_truncated` says earlier output was dropped).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    /** @description The process's pid in the sandbox */
                    pid: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description The pid in the sandbox */
                            pid: number;
                            command: string;
                            args: string[];
                            status: "running" | "exited";
                            /** @description null while running; 128+N when ended by signal N */
                            exit_code: number | null;
                            /** Format: date-time */
                            started_at: string;
                            /** Format: date-time */
                            ended_at: string | null;
                            /** @description Output so far: the latest bytes, up to the retention limit per stream */
                            stdout: string;
                            stderr: string;
                            /** @description Earlier stdout was dropped (only the latest bytes are retained) */
                            stdout_truncated: boolean;
                            stderr_truncated: boolean;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /**
         * Signal a background process
         * @description Sends `signal` (TERM, INT, HUP or KILL; default KILL) to the process and its process group.
         */
        delete: {
            parameters: {
                query?: {
                    /** @description Signal to send (default KILL) */
                    signal?: "TERM" | "INT" | "HUP" | "KILL";
                };
                header?: never;
                path: {
                    sandbox_id: string;
                    /** @description The process's pid in the sandbox */
                    pid: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            pid: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/commands/{pid}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Follow a background process's output (server-sent events)
         * @description A text/event-stream: `stdout` and `stderr` events ({text}) with the retained output from the start, then live output, and `end` ({pid, exit_code}) when the process exits. Closing the connection stops following (the process keeps running).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    /** @description The process's pid in the sandbox */
                    pid: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description text/event-stream */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/event-stream": string;
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/event-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/event-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/event-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "text/event-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/commands/{pid}/stdin": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Write to a background process's stdin
         * @description Writes `data` (UTF-8) to the process's stdin; `eof: true` closes it afterwards. Over the size limit is a 413.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    /** @description The process's pid in the sandbox */
                    pid: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Text written to the process's stdin as UTF-8 (at most 1 MiB by default) */
                        data: string;
                        /** @description Close stdin after writing */
                        eof?: boolean;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            pid: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/read": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Read a text file
         * @description Returns the file as UTF-8 text (invalid bytes become U+FFFD); up to 16777216 bytes, use download for larger or binary files.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                        path: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description The file as UTF-8 text */
                            content: string;
                            path: string;
                            /** @description Bytes */
                            size: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/write": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Write a text file
         * @description Creates or replaces the file with `content` (UTF-8); missing parent directories are created.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                        path: string;
                        /** @description Text to write (UTF-8); parent directories are created */
                        content: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            path: string;
                            bytes_written: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * List a directory
         * @description Entries of the directory (default /home/user), sorted by name, the first 1000 at most; symlinks are listed, not followed.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                        path?: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            files: {
                                name: string;
                                path: string;
                                size: number;
                                is_dir: boolean;
                                /** Format: date-time */
                                modified_at: string;
                                /** @description Type and permissions, as `ls -l` shows them (e.g. -rw-r--r--) */
                                mode: string;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Delete a file or a directory (with its contents) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                        path: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            path: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/mkdir": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create a directory (and its parents) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                        path: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            path: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/download": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download a file (raw bytes)
         * @description The file's bytes as application/octet-stream, up to 104857600 bytes.
         */
        get: {
            parameters: {
                query: {
                    /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                    path: string;
                };
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The file's bytes */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": string;
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/upload": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upload a file (multipart/form-data)
         * @description Form fields: `file` (the bytes, required) and `path` (optional, also accepted as a query parameter; default /home/user/<filename>; an existing directory or a path ending in / receives the file under its own name). Up to 100 MiB.
         */
        post: {
            parameters: {
                query?: {
                    /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                    path?: string;
                };
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            path: string;
                            size: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/upload": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upload a file (multipart/form-data)
         * @description Form fields: `file` (the bytes, required) and `path` (optional, also accepted as a query parameter; default /home/user/<filename>; an existing directory or a path ending in / receives the file under its own name). Up to 100 MiB.
         */
        post: {
            parameters: {
                query?: {
                    /** @description Absolute, or relative to /home/user; always resolved inside the sandbox */
                    path?: string;
                };
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            path: string;
                            size: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Copy a stored file into the sandbox
         * @description Streams the stored file `file_id` into the sandbox at `path` (default /home/user/<filename>).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description A file id (file-...) */
                        file_id: string;
                        /** @description Where to write it (default /home/user/<filename>; a directory receives it under its filename) */
                        path?: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            file_id: string;
                            path: string;
                            size: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/files/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Store a sandbox file as a new stored file
         * @description Streams the sandbox file at `path` into storage as a new file object (same size limit and quota as an upload).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Absolute, or relative to /home/user */
                        path: string;
                        /** @description What the file is for */
                        purpose: "assistants" | "batch" | "batch_output" | "fine-tune" | "vision" | "user_data" | "evals";
                        /** @description Default: the file's name in the sandbox */
                        filename?: string;
                        /** @description Seconds until the new file is deleted */
                        expires_after?: number;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description The stored file: the hosted API's {message, file_name, purpose} and the file object */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            file_name: string;
                            /** @description The file's id (file-...) */
                            id: string;
                            /** @enum {string} */
                            object: "file";
                            /** @description Size in bytes */
                            bytes: number;
                            /** @description Unix seconds */
                            created_at: number;
                            filename: string;
                            purpose: string;
                            /** @description SHA-256 of the bytes, hex */
                            sha256: string;
                            /** @description Unix seconds after which the file is deleted; null: never */
                            expires_at: number | null;
                            /** @description Seconds from creation to expiry; null: never */
                            expires_after: number | null;
                            /** @enum {string} */
                            status: "processed";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/code/contexts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List a sandbox's code contexts */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            contexts: {
                                context_id: string;
                                language: string;
                                cwd: string;
                                /** Format: date-time */
                                created_at: string;
                                /**
                                 * Format: date-time
                                 * @description The context ends with its sandbox
                                 */
                                expires_at: string;
                                /** @enum {string} */
                                status: "active";
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        /**
         * Create a code context (an isolated kernel)
         * @description Starts a new kernel for `language` (default python) in `cwd` (default /home/user; must be a directory in the sandbox). Pass its `context_id` to code/run to run there.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /**
                         * @description Language of the code
                         * @enum {string}
                         */
                        language?: "python" | "javascript" | "typescript" | "bash";
                        /** @description Working directory of the kernel (default /home/user) */
                        cwd?: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            context_id: string;
                            language: string;
                            cwd: string;
                            /** Format: date-time */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description The context ends with its sandbox
                             */
                            expires_at: string;
                            /** @enum {string} */
                            status: "active";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/code/contexts/{context_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a code context */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    context_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            context_id: string;
                            language: string;
                            cwd: string;
                            /** Format: date-time */
                            created_at: string;
                            /**
                             * Format: date-time
                             * @description The context ends with its sandbox
                             */
                            expires_at: string;
                            /** @enum {string} */
                            status: "active";
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Delete a code context: its kernel process ends */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    context_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            context_id: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/templates/build": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Build a template from an image
         * @description Starts building a template of your own from `docker_image` (pulled from a registry the operator allows; `registry_auth` for a private one), or from `template_id` (one of your templates), and then runs `build_steps` on it in a build sandbox. Answers 202 at once; follow the build with GET /templates/builds/{build_id}/status or its logs. Sandboxes created with the template's id (or name) run in its root filesystem. Or from `dockerfile` (its COPY/ADD files in `context`; multi-stage with COPY --from), translated onto the same steps.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Unique among your templates */
                        name: string;
                        description?: string;
                        /** @description One of your templates to run build_steps on (instead of docker_image) */
                        template_id?: string;
                        /** @description [registry/]repository[:tag|@sha256:digest], from a registry the operator allows */
                        docker_image?: string;
                        /** @description A Dockerfile: FROM an allowed image, one of your templates or an earlier stage (FROM ... AS name); RUN, COPY/ADD (from `context`, or COPY --from=<stage>), ENV, ARG, WORKDIR, LABEL, USER root */
                        dockerfile?: string;
                        /** @description The dockerfile's build context: relative path → content (base64), the files COPY and ADD take */
                        context?: {
                            [key: string]: string;
                        };
                        /** @description Credentials for docker_image's registry: used for this build only, never stored */
                        registry_auth?: {
                            username: string;
                            password: string;
                        };
                        vcpu_count?: number;
                        memory_mb?: number;
                        disk_mb?: number;
                        /** @description Not supported (400) */
                        start_cmd?: string;
                        /** @description Not supported (400) */
                        ready_cmd?: string;
                        ready_timeout_secs?: number;
                        environment?: {
                            [key: string]: string;
                        };
                        /** @description Run in order in a build sandbox on docker_image's or template_id's root */
                        build_steps?: {
                            /** @enum {string} */
                            type: "run" | "pip_install" | "npm_install" | "apt_install" | "bun_install" | "copy_file" | "git_clone" | "mkdir";
                            args?: string[];
                            /** @description base64 (copy_file) */
                            content?: string;
                            options?: {
                                [key: string]: unknown;
                            };
                        }[];
                        tags?: {
                            [key: string]: string;
                        };
                        /** @description What the build's steps (RUN, pip_install, apt_install...) may reach, through the egress proxy as a sandbox's `network`: only the allow_out destinations, never the operator's denied or never-reachable ones. Absent (or allow_out empty): the build has no network. */
                        network?: {
                            /** @description Reachable destinations; when set, only these: domain names (pypi.org, *.github.com for any subdomain), IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) */
                            allow_out?: string[];
                            /** @description Refused destinations (deny wins): domain names (pypi.org, *.github.com for any subdomain), IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) */
                            deny_out?: string[];
                        };
                    };
                };
            };
            responses: {
                /** @description Default Response */
                202: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            build_id: string;
                            template_id: string;
                            status: string;
                            message: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/templates/builds": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your latest template builds
         * @description Newest first, each with its status (as GET /templates/builds/{build_id}/status shows it) and its template's name.
         */
        get: {
            parameters: {
                query?: {
                    /** @description How many, newest first (1..200, default 50) */
                    limit?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            builds: {
                                build_id: string;
                                template_id: string;
                                status: "pending" | "started" | "running" | "completed" | "failed" | "cancelled";
                                phase: "initializing" | "preparing" | "building" | "finalizing" | "completed";
                                progress_percent: number;
                                error: string | null;
                                started_at: string | null;
                                completed_at: string | null;
                                /** @description The node that runs the build (AGENTBOX_NODE_ID; in a cluster, the executor it was placed on); null for a build recorded before nodes were */
                                node_id: string | null;
                                template_name: string;
                                /** @description When the build was asked for */
                                created_at: string;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/templates/builds/{build_id}/status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A template build's status */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    build_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            build_id: string;
                            template_id: string;
                            status: "pending" | "started" | "running" | "completed" | "failed" | "cancelled";
                            phase: "initializing" | "preparing" | "building" | "finalizing" | "completed";
                            progress_percent: number;
                            error: string | null;
                            started_at: string | null;
                            completed_at: string | null;
                            /** @description The node that runs the build (AGENTBOX_NODE_ID; in a cluster, the executor it was placed on); null for a build recorded before nodes were */
                            node_id: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/templates/builds/{build_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Cancel a template build
         * @description Cancels a build of yours that waits or runs: a waiting one leaves the queue, a running one has its tools and its build sandbox killed. Answers once it has ended, with its status (`cancelled`); its template is `failed` (delete it, or build again under another name) and what the build held is given back. 409 when the build has ended already.
         */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    build_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            build_id: string;
                            template_id: string;
                            status: "pending" | "started" | "running" | "completed" | "failed" | "cancelled";
                            phase: "initializing" | "preparing" | "building" | "finalizing" | "completed";
                            progress_percent: number;
                            error: string | null;
                            started_at: string | null;
                            completed_at: string | null;
                            /** @description The node that runs the build (AGENTBOX_NODE_ID; in a cluster, the executor it was placed on); null for a build recorded before nodes were */
                            node_id: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/templates/builds/{build_id}/logs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A template build's log
         * @description text/event-stream: one `log` event ({n, at, line}) per line so far, then each new line as the build writes it, then `end` with the build's status. A log keeps its latest lines (AGENTBOX_TEMPLATE_LOG_KB); when earlier ones were dropped, a first `log` event with `n` -1 says how many. Kept until the build's template is deleted.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    build_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/templates/{template_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a template */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    template_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            name: string;
                            description: string;
                            vcpu_count: number;
                            memory_mb: number;
                            disk_size_mb: number;
                            visibility: string;
                            created_at: string;
                            updated_at: string;
                            /** @description building, ready or failed */
                            status: string;
                            base_image?: string | null;
                            environment?: {
                                [key: string]: string;
                            };
                            /** @description Where its sandboxes start (a Dockerfile's WORKDIR) */
                            workdir?: string | null;
                            tags?: {
                                [key: string]: string;
                            };
                            build_id?: string | null;
                            /** @description Started sandboxes waiting in the template's warm pool now (creates from it take one) */
                            warm_sandboxes?: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /**
         * Delete a template
         * @description 204. Refused (409) while live sandboxes run from it or while it builds; built-in templates cannot be deleted (400).
         */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    template_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                204: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/template": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Save a sandbox as a template
         * @description 201 with the new template, ready at once. It runs in the same root as the sandbox (its template's root filesystem, shared, or the built-ins' system) and every sandbox created from it starts with the files the sandbox's /home/user holds now (archived inside the sandbox, as a snapshot is, and held to the snapshot size limit); its limits, environment and workdir are those of the sandbox's template. The sandbox must be running (409 when paused). 409 when the name is taken, 429 past the template count.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Unique among your templates */
                        name: string;
                        description?: string;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            name: string;
                            description: string;
                            vcpu_count: number;
                            memory_mb: number;
                            disk_size_mb: number;
                            visibility: string;
                            created_at: string;
                            updated_at: string;
                            /** @description building, ready or failed */
                            status: string;
                            base_image?: string | null;
                            environment?: {
                                [key: string]: string;
                            };
                            /** @description Where its sandboxes start (a Dockerfile's WORKDIR) */
                            workdir?: string | null;
                            tags?: {
                                [key: string]: string;
                            };
                            build_id?: string | null;
                            /** @description Started sandboxes waiting in the template's warm pool now (creates from it take one) */
                            warm_sandboxes?: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                507: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Resource use of a sandbox
         * @description CPU (percent of the sandbox's CPU allowance since the previous call) and memory (MiB) from the sandbox's cgroup; network bytes from its own network namespace; disk_read/disk_write are bytes read and written by its processes.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: date-time */
                            timestamp: string;
                            /** @description Percent of the sandbox's CPU allowance used since the previous call (first call: since start) */
                            cpu_usage: number;
                            /** @description MiB in use by the sandbox's processes and its in-memory files */
                            memory_usage: number;
                            /** @description The sandbox's memory limit, MiB */
                            memory_total: number;
                            /** @description Bytes read by the sandbox's processes (read syscalls; see docs/api.md) */
                            disk_read: number;
                            /** @description Bytes written by the sandbox's processes (write syscalls; see docs/api.md) */
                            disk_write: number;
                            /** @description Bytes received on the sandbox's network interfaces */
                            network_rx: number;
                            /** @description Bytes sent on the sandbox's network interfaces */
                            network_tx: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/network": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The sandbox's egress policy */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            internet_access: boolean;
                            allow_out: string[];
                            deny_out: string[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        /** Change the egress policy of a running sandbox (fields left out keep their value); applies to the next connection */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Reach any public address (minus deny_out) when allow_out is empty */
                        internet_access?: boolean;
                        /** @description Reachable destinations; when set, only these: domain names (pypi.org, *.github.com for any subdomain), IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) */
                        allow_out?: string[];
                        /** @description Refused destinations (deny wins): domain names (pypi.org, *.github.com for any subdomain), IP addresses or CIDRs (10.0.0.0/8, 2001:db8::/32) */
                        deny_out?: string[];
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            internet_access: boolean;
                            allow_out: string[];
                            deny_out: string[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/network/log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The sandbox's egress attempts, oldest first (bounded per sandbox) */
        get: {
            parameters: {
                query?: {
                    /** @description Newest entries to return (default 100) */
                    limit?: string;
                };
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            entries: {
                                /** Format: date-time */
                                time: string;
                                host: string;
                                port: number;
                                address: string | null;
                                allowed: boolean;
                                reason: string;
                                /** @description Bytes from the sandbox out */
                                bytes_out: number;
                                /** @description Bytes from the destination in */
                                bytes_in: number;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/host/{port}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The URL of a port of the sandbox (reached with your API key, or via a share link) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            url: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/ports/{port}/share": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** A link to a port of the sandbox that works without the API key until it expires */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Seconds the link works (at most the operator's AGENTBOX_SHARE_MAX_S) */
                        expires_in: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            url: string;
                            /** Format: date-time */
                            expires_at: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/ports/{port}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        options: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        head: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        trace?: never;
    };
    "/v1/agents/sandboxes/{sandbox_id}/ports/{port}/{*}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        options: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        head: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        /** The sandbox's HTTP server on this port (any method; WebSocket upgrades too), streamed both ways */
        patch: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                    port: string;
                    "*": string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content?: never;
                };
            };
        };
        trace?: never;
    };
    "/v1/admin/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List API keys
         * @description Every key, revoked ones too, without the keys themselves.
         */
        get: {
            parameters: {
                query?: {
                    /** @description Tenant id (letters, digits, . _ : -; up to 128) */
                    tenant_id?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            keys: {
                                id: string;
                                tenant_id: string;
                                name: string;
                                /** @description The key's first characters, to recognise it */
                                prefix: string;
                                /** Format: date-time */
                                created_at: string;
                                /** Format: date-time */
                                revoked_at: string | null;
                                rate_limit_per_minute: number | null;
                                max_concurrent_runs: number | null;
                                /**
                                 * Format: date-time
                                 * @description The key's last request; null if never used. Stored once a minute, so after a restart up to a minute old
                                 */
                                last_used_at: string | null;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        /**
         * Create an API key
         * @description The key is in this answer only; the service keeps its hash. Without tenant_id the key gets a tenant of its own.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description What the key is for */
                        name: string;
                        /** @description Tenant id (letters, digits, . _ : -; up to 128) */
                        tenant_id?: string;
                        /** @description Requests per minute for this key (default: the service's) */
                        rate_limit_per_minute?: number;
                        /** @description Executions at once for this key (default: the service's) */
                        max_concurrent_runs?: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                201: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description The API key: shown only in this answer */
                            key: string;
                            id: string;
                            tenant_id: string;
                            name: string;
                            /** @description The key's first characters, to recognise it */
                            prefix: string;
                            /** Format: date-time */
                            created_at: string;
                            /** Format: date-time */
                            revoked_at: string | null;
                            rate_limit_per_minute: number | null;
                            max_concurrent_runs: number | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke an API key
         * @description The key is refused from the next request on, and what it has open ends at once: event streams (their last event is an `end` with a 401 error), file transfers, connections relayed to sandbox ports, and share links it made. Revoking an unknown or already revoked key is a 404.
         */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            id: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List tenants
         * @description Tenants that have quotas set or API keys (the bootstrap key's tenant `default` included), with their stored and effective quotas.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            tenants: {
                                tenant_id: string;
                                /** @description As set by the operator; null: the service's default */
                                quotas: {
                                    max_sandboxes: number | null;
                                    max_concurrent_runs: number | null;
                                    memory_mb: number | null;
                                    max_processes: number | null;
                                    storage_mb: number | null;
                                    max_vector_indexes: number | null;
                                    max_vectors: number | null;
                                    vector_storage_mb: number | null;
                                };
                                /** @description What applies: the set value, or the default where none is set */
                                effective: {
                                    /** @description Live sandboxes at once */
                                    max_sandboxes: number;
                                    /** @description code/run and commands/run executing at once, over all the tenant's keys */
                                    max_concurrent_runs: number;
                                    /** @description Memory of all the tenant's sandboxes together, MiB */
                                    memory_mb: number;
                                    /** @description Processes and threads of all the tenant's sandboxes together */
                                    max_processes: number;
                                    /** @description Bytes of the tenant's stored files and snapshots together, writes in flight included, MiB */
                                    storage_mb: number;
                                    /** @description Vector indexes at once */
                                    max_vector_indexes: number;
                                    /** @description Vectors in all the tenant's indexes together */
                                    max_vectors: number;
                                    /** @description Bytes of all the tenant's vectors together (embedding, metadata JSON and id of each), MiB */
                                    vector_storage_mb: number;
                                };
                                /** @description API keys of this tenant that are not revoked */
                                active_keys: number;
                                /**
                                 * Format: date-time
                                 * @description When the operator suspended the tenant (its keys are refused with 403 tenant_suspended); null if active
                                 */
                                suspended_at: string | null;
                                /**
                                 * Format: date-time
                                 * @description When quotas were first set; null if never
                                 */
                                created_at: string | null;
                                /** Format: date-time */
                                updated_at: string | null;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A tenant's quotas
         * @description Any tenant id answers: one never configured has every quota unset (null) and the defaults in effect.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Tenant id (letters, digits, . _ : -; up to 128) */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            tenant_id: string;
                            /** @description As set by the operator; null: the service's default */
                            quotas: {
                                max_sandboxes: number | null;
                                max_concurrent_runs: number | null;
                                memory_mb: number | null;
                                max_processes: number | null;
                                storage_mb: number | null;
                                max_vector_indexes: number | null;
                                max_vectors: number | null;
                                vector_storage_mb: number | null;
                            };
                            /** @description What applies: the set value, or the default where none is set */
                            effective: {
                                /** @description Live sandboxes at once */
                                max_sandboxes: number;
                                /** @description code/run and commands/run executing at once, over all the tenant's keys */
                                max_concurrent_runs: number;
                                /** @description Memory of all the tenant's sandboxes together, MiB */
                                memory_mb: number;
                                /** @description Processes and threads of all the tenant's sandboxes together */
                                max_processes: number;
                                /** @description Bytes of the tenant's stored files and snapshots together, writes in flight included, MiB */
                                storage_mb: number;
                                /** @description Vector indexes at once */
                                max_vector_indexes: number;
                                /** @description Vectors in all the tenant's indexes together */
                                max_vectors: number;
                                /** @description Bytes of all the tenant's vectors together (embedding, metadata JSON and id of each), MiB */
                                vector_storage_mb: number;
                            };
                            /** @description API keys of this tenant that are not revoked */
                            active_keys: number;
                            /**
                             * Format: date-time
                             * @description When the operator suspended the tenant (its keys are refused with 403 tenant_suspended); null if active
                             */
                            suspended_at: string | null;
                            /**
                             * Format: date-time
                             * @description When quotas were first set; null if never
                             */
                            created_at: string | null;
                            /** Format: date-time */
                            updated_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        /**
         * Set a tenant's quotas
         * @description Sets the quotas given (null: back to the default); the others are kept. A tenant not yet known is created. New limits apply to the tenant's next requests and at once to its live sandboxes; a memory limit below what they use now is refused (400 invalid_state) and nothing changes.
         */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Tenant id (letters, digits, . _ : -; up to 128) */
                    id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Live sandboxes at once */
                        max_sandboxes?: number | null;
                        /** @description code/run and commands/run executing at once, over all the tenant's keys */
                        max_concurrent_runs?: number | null;
                        /** @description Memory of all the tenant's sandboxes together, MiB */
                        memory_mb?: number | null;
                        /** @description Processes and threads of all the tenant's sandboxes together */
                        max_processes?: number | null;
                        /** @description Bytes of the tenant's stored files and snapshots together, writes in flight included, MiB */
                        storage_mb?: number | null;
                        /** @description Vector indexes at once */
                        max_vector_indexes?: number | null;
                        /** @description Vectors in all the tenant's indexes together */
                        max_vectors?: number | null;
                        /** @description Bytes of all the tenant's vectors together (embedding, metadata JSON and id of each), MiB */
                        vector_storage_mb?: number | null;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            tenant_id: string;
                            /** @description As set by the operator; null: the service's default */
                            quotas: {
                                max_sandboxes: number | null;
                                max_concurrent_runs: number | null;
                                memory_mb: number | null;
                                max_processes: number | null;
                                storage_mb: number | null;
                                max_vector_indexes: number | null;
                                max_vectors: number | null;
                                vector_storage_mb: number | null;
                            };
                            /** @description What applies: the set value, or the default where none is set */
                            effective: {
                                /** @description Live sandboxes at once */
                                max_sandboxes: number;
                                /** @description code/run and commands/run executing at once, over all the tenant's keys */
                                max_concurrent_runs: number;
                                /** @description Memory of all the tenant's sandboxes together, MiB */
                                memory_mb: number;
                                /** @description Processes and threads of all the tenant's sandboxes together */
                                max_processes: number;
                                /** @description Bytes of the tenant's stored files and snapshots together, writes in flight included, MiB */
                                storage_mb: number;
                                /** @description Vector indexes at once */
                                max_vector_indexes: number;
                                /** @description Vectors in all the tenant's indexes together */
                                max_vectors: number;
                                /** @description Bytes of all the tenant's vectors together (embedding, metadata JSON and id of each), MiB */
                                vector_storage_mb: number;
                            };
                            /** @description API keys of this tenant that are not revoked */
                            active_keys: number;
                            /**
                             * Format: date-time
                             * @description When the operator suspended the tenant (its keys are refused with 403 tenant_suspended); null if active
                             */
                            suspended_at: string | null;
                            /**
                             * Format: date-time
                             * @description When quotas were first set; null if never
                             */
                            created_at: string | null;
                            /** Format: date-time */
                            updated_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants/{id}/suspend": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Suspend a tenant
         * @description Every key of the tenant is refused from the next request on (403 tenant_suspended), what its keys hold open ends at once (event streams, file transfers, connections relayed to sandbox ports, share links), and its running sandboxes are paused (frozen: no CPU, memory kept). Resuming the tenant lets its keys in again; it resumes its sandboxes itself. Suspending a suspended tenant changes nothing.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Tenant id (letters, digits, . _ : -; up to 128) */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            tenant_id: string;
                            /** @description As set by the operator; null: the service's default */
                            quotas: {
                                max_sandboxes: number | null;
                                max_concurrent_runs: number | null;
                                memory_mb: number | null;
                                max_processes: number | null;
                                storage_mb: number | null;
                                max_vector_indexes: number | null;
                                max_vectors: number | null;
                                vector_storage_mb: number | null;
                            };
                            /** @description What applies: the set value, or the default where none is set */
                            effective: {
                                /** @description Live sandboxes at once */
                                max_sandboxes: number;
                                /** @description code/run and commands/run executing at once, over all the tenant's keys */
                                max_concurrent_runs: number;
                                /** @description Memory of all the tenant's sandboxes together, MiB */
                                memory_mb: number;
                                /** @description Processes and threads of all the tenant's sandboxes together */
                                max_processes: number;
                                /** @description Bytes of the tenant's stored files and snapshots together, writes in flight included, MiB */
                                storage_mb: number;
                                /** @description Vector indexes at once */
                                max_vector_indexes: number;
                                /** @description Vectors in all the tenant's indexes together */
                                max_vectors: number;
                                /** @description Bytes of all the tenant's vectors together (embedding, metadata JSON and id of each), MiB */
                                vector_storage_mb: number;
                            };
                            /** @description API keys of this tenant that are not revoked */
                            active_keys: number;
                            /**
                             * Format: date-time
                             * @description When the operator suspended the tenant (its keys are refused with 403 tenant_suspended); null if active
                             */
                            suspended_at: string | null;
                            /**
                             * Format: date-time
                             * @description When quotas were first set; null if never
                             */
                            created_at: string | null;
                            /** Format: date-time */
                            updated_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/tenants/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Let a suspended tenant back in
         * @description Its keys work again from the next request on; its sandboxes stay paused until it resumes them.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description Tenant id (letters, digits, . _ : -; up to 128) */
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            tenant_id: string;
                            /** @description As set by the operator; null: the service's default */
                            quotas: {
                                max_sandboxes: number | null;
                                max_concurrent_runs: number | null;
                                memory_mb: number | null;
                                max_processes: number | null;
                                storage_mb: number | null;
                                max_vector_indexes: number | null;
                                max_vectors: number | null;
                                vector_storage_mb: number | null;
                            };
                            /** @description What applies: the set value, or the default where none is set */
                            effective: {
                                /** @description Live sandboxes at once */
                                max_sandboxes: number;
                                /** @description code/run and commands/run executing at once, over all the tenant's keys */
                                max_concurrent_runs: number;
                                /** @description Memory of all the tenant's sandboxes together, MiB */
                                memory_mb: number;
                                /** @description Processes and threads of all the tenant's sandboxes together */
                                max_processes: number;
                                /** @description Bytes of the tenant's stored files and snapshots together, writes in flight included, MiB */
                                storage_mb: number;
                                /** @description Vector indexes at once */
                                max_vector_indexes: number;
                                /** @description Vectors in all the tenant's indexes together */
                                max_vectors: number;
                                /** @description Bytes of all the tenant's vectors together (embedding, metadata JSON and id of each), MiB */
                                vector_storage_mb: number;
                            };
                            /** @description API keys of this tenant that are not revoked */
                            active_keys: number;
                            /**
                             * Format: date-time
                             * @description When the operator suspended the tenant (its keys are refused with 403 tenant_suspended); null if active
                             */
                            suspended_at: string | null;
                            /**
                             * Format: date-time
                             * @description When quotas were first set; null if never
                             */
                            created_at: string | null;
                            /** Format: date-time */
                            updated_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/sandboxes/{sandbox_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Kill any tenant's sandbox (its ended event says killed by the operator) */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    sandbox_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            sandbox_id: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/nodes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the cluster's nodes
         * @description Every node that joined the cluster, read from Redis now: its state (`up`, `draining`, `drained`, `lost`), lease epoch and load. A service running alone lists itself (epoch 0).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            nodes: {
                                /** @description The node's AGENTBOX_NODE_ID */
                                id: string;
                                /** @description Where the other nodes reach it (AGENTBOX_NODE_URL) */
                                url: string;
                                roles: "both" | "api" | "executor";
                                /** @description `up`; `draining`: takes no new sandboxes and moves its own to other executors; `drained`: it was draining and left the cluster once its last sandbox ended or moved (it is `up` again when it starts again); `lost`: its lease expired (its sandboxes ended with reason node_lost) */
                                state: "up" | "draining" | "drained" | "lost";
                                /** @description Its lease epoch: raised at each join; a sandbox belongs to a node and an epoch */
                                epoch: number;
                                live_sandboxes: number;
                                /** @description Sandboxes its drain has moved to other executors (since the node started) */
                                moved_sandboxes: number;
                                /** @description Live and hibernated sandboxes still on it: a draining node leaves once none is left */
                                remaining_sandboxes: number;
                                /** @description Available memory of its host, MiB */
                                free_memory_mb: number;
                                total_memory_mb: number;
                                /** @description One-minute load average per core */
                                cpu_load: number;
                                /** @description The node's GPUs by model (empty: none); a deployment asking for N GPUs is placed on a node with N free */
                                gpus: {
                                    /** @description The GPUs' model, as the node names it (nvidia-smi, or AGENTBOX_NODE_GPUS) */
                                    model: string;
                                    /** @description How many of this model the node has */
                                    count: number;
                                    /** @description How many of them no deployment holds */
                                    free: number;
                                }[];
                                /** @description Its last heartbeat */
                                heartbeat_at: string | null;
                                started_at: string | null;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/nodes/{id}/drain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Drain a node
         * @description The node takes no new sandboxes from now on (creates go to the other executors) and moves its sandboxes to the other executors by snapshot (with snapshots in S3): each keeps its id and files, a running one runs again on its new node at once (kernel state lost), a paused one stays paused there. What cannot move stays and runs on until it ends. Once none is left it leaves the cluster by itself (state `drained`); `moved_sandboxes` and `remaining_sandboxes` say how far it is. A service running alone answers 400 `invalid_state`.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description A node of the cluster and its load */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description The node's AGENTBOX_NODE_ID */
                            id: string;
                            /** @description Where the other nodes reach it (AGENTBOX_NODE_URL) */
                            url: string;
                            roles: "both" | "api" | "executor";
                            /** @description `up`; `draining`: takes no new sandboxes and moves its own to other executors; `drained`: it was draining and left the cluster once its last sandbox ended or moved (it is `up` again when it starts again); `lost`: its lease expired (its sandboxes ended with reason node_lost) */
                            state: "up" | "draining" | "drained" | "lost";
                            /** @description Its lease epoch: raised at each join; a sandbox belongs to a node and an epoch */
                            epoch: number;
                            live_sandboxes: number;
                            /** @description Sandboxes its drain has moved to other executors (since the node started) */
                            moved_sandboxes: number;
                            /** @description Live and hibernated sandboxes still on it: a draining node leaves once none is left */
                            remaining_sandboxes: number;
                            /** @description Available memory of its host, MiB */
                            free_memory_mb: number;
                            total_memory_mb: number;
                            /** @description One-minute load average per core */
                            cpu_load: number;
                            /** @description The node's GPUs by model (empty: none); a deployment asking for N GPUs is placed on a node with N free */
                            gpus: {
                                /** @description The GPUs' model, as the node names it (nvidia-smi, or AGENTBOX_NODE_GPUS) */
                                model: string;
                                /** @description How many of this model the node has */
                                count: number;
                                /** @description How many of them no deployment holds */
                                free: number;
                            }[];
                            /** @description Its last heartbeat */
                            heartbeat_at: string | null;
                            started_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Your activity over the last hour
         * @description The key's tenant only: its live sandboxes, runs per second and error rate over the last minute, the last hour in 10 s steps, runs per language.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: date-time */
                            timestamp: string;
                            /** @description Sandboxes running now (the key's tenant's; the service's under /v1/admin) */
                            live_sandboxes: number;
                            /** @description Code runs per second over the last minute */
                            runs_per_second: number;
                            /** @description Fraction (0..1) of the last minute's runs that failed (error, timeout, out of memory, ...) */
                            error_rate: number;
                            /** @description Seconds between two points of the series */
                            interval_seconds: number;
                            /** @description The last hour, oldest first (shorter after a restart) */
                            series: {
                                /** Format: date-time */
                                timestamp: string;
                                /** @description Runs in the interval that ends here */
                                runs: number;
                                /** @description Failed runs in that interval */
                                errors: number;
                                live_sandboxes: number;
                            }[];
                            /** @description Runs per language since the service started */
                            runs_by_language: {
                                language: string;
                                runs: number;
                                errors: number;
                            }[];
                            /** @description Only under /v1/admin/stats: each tenant with a live sandbox or a run since the service started, busiest first */
                            tenants?: {
                                tenant_id: string;
                                live_sandboxes: number;
                                /** @description Code runs since the service started */
                                runs: number;
                                /** @description Failed runs since the service started */
                                errors: number;
                            }[];
                            /** @description Only in a cluster, and only when some node did not answer in time: the ids of the nodes whose numbers are left out (the others' are summed) */
                            missing_nodes?: string[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The service's activity over the last hour, per tenant
         * @description The whole service, as /v1/agents/stats shows a tenant, plus `tenants`: each tenant's live sandboxes and runs.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** Format: date-time */
                            timestamp: string;
                            /** @description Sandboxes running now (the key's tenant's; the service's under /v1/admin) */
                            live_sandboxes: number;
                            /** @description Code runs per second over the last minute */
                            runs_per_second: number;
                            /** @description Fraction (0..1) of the last minute's runs that failed (error, timeout, out of memory, ...) */
                            error_rate: number;
                            /** @description Seconds between two points of the series */
                            interval_seconds: number;
                            /** @description The last hour, oldest first (shorter after a restart) */
                            series: {
                                /** Format: date-time */
                                timestamp: string;
                                /** @description Runs in the interval that ends here */
                                runs: number;
                                /** @description Failed runs in that interval */
                                errors: number;
                                live_sandboxes: number;
                            }[];
                            /** @description Runs per language since the service started */
                            runs_by_language: {
                                language: string;
                                runs: number;
                                errors: number;
                            }[];
                            /** @description Only under /v1/admin/stats: each tenant with a live sandbox or a run since the service started, busiest first */
                            tenants?: {
                                tenant_id: string;
                                live_sandboxes: number;
                                /** @description Code runs since the service started */
                                runs: number;
                                /** @description Failed runs since the service started */
                                errors: number;
                            }[];
                            /** @description Only in a cluster, and only when some node did not answer in time: the ids of the nodes whose numbers are left out (the others' are summed) */
                            missing_nodes?: string[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/files": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List stored files
         * @description The caller's files, newest first by default; page with `limit` and `after` (the last id of the previous page).
         */
        get: {
            parameters: {
                query?: {
                    /** @description Page size (1..10000, default 1000) */
                    limit?: string;
                    /** @description Cursor: the last id of the previous page */
                    after?: string;
                    /** @description By creation; default desc (newest first) */
                    order?: "asc" | "desc";
                    /** @description What the file is for */
                    purpose?: "assistants" | "batch" | "batch_output" | "fine-tune" | "vision" | "user_data" | "evals";
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @description The file's id (file-...) */
                                id: string;
                                /** @enum {string} */
                                object: "file";
                                /** @description Size in bytes */
                                bytes: number;
                                /** @description Unix seconds */
                                created_at: number;
                                filename: string;
                                purpose: string;
                                /** @description SHA-256 of the bytes, hex */
                                sha256: string;
                                /** @description Unix seconds after which the file is deleted; null: never */
                                expires_at: number | null;
                                /** @description Seconds from creation to expiry; null: never */
                                expires_after: number | null;
                                /** @enum {string} */
                                status: "processed";
                            }[];
                            first_id: string | null;
                            last_id: string | null;
                            has_more: boolean;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        /**
         * Upload a file (multipart/form-data)
         * @description Form fields: `file` (the bytes), `purpose` (assistants, batch, batch_output, fine-tune, vision, user_data, evals) and optionally `expires_after` (seconds until the file is deleted). The bytes stream to storage and are checksummed (sha256); up to 512 MiB per file (413 past it) and the tenant's storage quota (429).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The stored file: the hosted API's {message, file_name, purpose} and the file object */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            file_name: string;
                            /** @description The file's id (file-...) */
                            id: string;
                            /** @enum {string} */
                            object: "file";
                            /** @description Size in bytes */
                            bytes: number;
                            /** @description Unix seconds */
                            created_at: number;
                            filename: string;
                            purpose: string;
                            /** @description SHA-256 of the bytes, hex */
                            sha256: string;
                            /** @description Unix seconds after which the file is deleted; null: never */
                            expires_at: number | null;
                            /** @description Seconds from creation to expiry; null: never */
                            expires_after: number | null;
                            /** @enum {string} */
                            status: "processed";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/files/{file_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a stored file's record */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description A file id (file-...) */
                    file_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @description The file's id (file-...) */
                            id: string;
                            /** @enum {string} */
                            object: "file";
                            /** @description Size in bytes */
                            bytes: number;
                            /** @description Unix seconds */
                            created_at: number;
                            filename: string;
                            purpose: string;
                            /** @description SHA-256 of the bytes, hex */
                            sha256: string;
                            /** @description Unix seconds after which the file is deleted; null: never */
                            expires_at: number | null;
                            /** @description Seconds from creation to expiry; null: never */
                            expires_after: number | null;
                            /** @enum {string} */
                            status: "processed";
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        /** Delete a stored file */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description A file id (file-...) */
                    file_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            file_id: string;
                            file_name: string;
                            id: string;
                            /** @enum {string} */
                            object: "file";
                            /** @enum {boolean} */
                            deleted: true;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/files/{file_id}/content": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The file's bytes (content)
         * @description Raw bytes with Content-Length and the SHA-256 as ETag. A single `Range: bytes=a-b` (or `a-`, `-n`) is answered with 206 and Content-Range; a range outside the file with 416; several ranges with the whole file.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description A file id (file-...) */
                    file_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The file's bytes */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": string;
                    };
                };
                /** @description The requested range */
                206: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": string;
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                416: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/files/{file_id}/download": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The file's bytes (download)
         * @description Raw bytes with Content-Length and the SHA-256 as ETag. A single `Range: bytes=a-b` (or `a-`, `-n`) is answered with 206 and Content-Range; a range outside the file with 416; several ranges with the whole file.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    /** @description A file id (file-...) */
                    file_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description The file's bytes */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": string;
                    };
                };
                /** @description The requested range */
                206: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": string;
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                416: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/octet-stream": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/inference/models": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List models
         * @description The models the gateway routes (OpenAI list shape). Providers that route by prefix list only their named models. In a cluster, every node's models and the tenant's deployments on every node, each once (a request naming one is answered by a node that serves it).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                id: string;
                                /** @enum {string} */
                                object: "model";
                                created: number;
                                owned_by: string;
                                /** @description What the gateway serves this model for: `chat` (POST /chat/completions), `completions` (POST /completions), `embeddings` (POST /embeddings). An AgentBox field; OpenAI clients ignore it. */
                                capabilities: ("chat" | "completions" | "embeddings")[];
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/inference/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Token usage of the calling API key
         * @description Prompt and completion tokens and request counts per model, for the key that calls this.
         */
        get: {
            parameters: {
                query?: {
                    /** @description Only usage recorded at or after this ISO-8601 time */
                    since?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            usage: {
                                model: string;
                                prompt_tokens: number;
                                completion_tokens: number;
                                requests: number;
                            }[];
                            total_tokens: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/inference/chat/completions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a chat completion
         * @description OpenAI-compatible. `stream: true` answers with server-sent events. The tool `{"type": "code_interpreter"}` lets the model run code in a sandbox; the response then lists each run in `steps`.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            /** @description An OpenAI chat completion request; other fields are passed to the upstream as they are */
            requestBody: {
                content: {
                    "application/json": {
                        /** @description A model id from GET /v1/inference/models */
                        model: string;
                        messages: ({
                            role: "system" | "developer" | "user" | "assistant" | "tool" | "function";
                            content?: string | ({
                                type: string;
                            } & {
                                [key: string]: unknown;
                            })[] | (never | null);
                            name?: string;
                            tool_calls?: ({
                                id: string;
                                type: string;
                            } & {
                                [key: string]: unknown;
                            })[];
                            tool_call_id?: string;
                        } & {
                            [key: string]: unknown;
                        })[];
                        stream?: boolean;
                        stream_options?: ({
                            include_usage?: boolean;
                        } & {
                            [key: string]: unknown;
                        }) | null;
                        tools?: ({
                            /** @description A function tool (`{"type": "function", "function": {...}}`) or the built-in code tool `{"type": "code_interpreter", "sandbox_id"?: string, "timeout"?: seconds}` */
                            type: string;
                        } & {
                            [key: string]: unknown;
                        })[];
                        tool_choice?: unknown;
                        temperature?: number;
                        top_p?: number;
                        max_tokens?: number;
                        max_completion_tokens?: number;
                        stop?: string | string[] | (never | null);
                        response_format?: {
                            type: string;
                        } & {
                            [key: string]: unknown;
                        };
                        /** @description Rounds of the built-in code tool before the model must answer (default 8) */
                        max_steps?: number;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description An OpenAI chat.completion object. With `stream: true` the answer is text/event-stream instead: `data: {chat.completion.chunk}` events ending with `data: [DONE]`; each code-tool run is a chunk with an empty delta and a `tool_step` field. */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            /** @description chat.completion */
                            object: string;
                            created: number;
                            model: string;
                            choices: unknown[];
                            usage?: unknown;
                            /** @description With the code tool: each code run, as {tool_call_id, language, code, result: {logs, error, execution_time_ms}} */
                            steps?: unknown[];
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                504: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/inference/completions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a text completion (legacy)
         * @description OpenAI-compatible legacy completions: the prompt is continued as it is (no chat template). `stream: true` answers with server-sent events of `text_completion` objects ending with `data: [DONE]`.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            /** @description An OpenAI legacy completion request; other fields are passed to the upstream as they are */
            requestBody: {
                content: {
                    "application/json": {
                        /** @description A model id from GET /v1/inference/models */
                        model: string;
                        /** @description The text to continue, or up to 16 texts (one choice each, times n) */
                        prompt: string | string[];
                        stream?: boolean;
                        stream_options?: ({
                            include_usage?: boolean;
                        } & {
                            [key: string]: unknown;
                        }) | null;
                        /** @description Tokens to generate per choice (default 16) */
                        max_tokens?: number;
                        temperature?: number;
                        top_p?: number;
                        /** @description Choices per prompt */
                        n?: number;
                        seed?: number;
                        /** @description Start each choice's text with its prompt */
                        echo?: boolean;
                        stop?: string | string[] | (never | null);
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description An OpenAI text_completion object (with `stream: true`, SSE events of the same shape ending with `data: [DONE]`) */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            /** @description text_completion */
                            object: string;
                            created: number;
                            model: string;
                            choices: ({
                                text: string;
                                index: number;
                                logprobs: (never | null) | unknown;
                                finish_reason: string | null;
                            } & {
                                [key: string]: unknown;
                            })[];
                            usage?: unknown;
                        } & {
                            [key: string]: unknown;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                504: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/inference/embeddings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create embeddings
         * @description OpenAI-compatible. Without `model`, the embedded default model (512 dimensions, runs offline), shared fairly between tenants: 429 when the tenant already has too many inputs waiting, 503 when the request cannot be embedded within the deadline.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Default: the embedded model GET /models lists */
                        model?: string;
                        input: string | string[];
                        encoding_format?: "float" | "base64";
                        dimensions?: number;
                        user?: string;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            /** @enum {string} */
                            object: "list";
                            data: {
                                /** @enum {string} */
                                object: "embedding";
                                embedding: number[] | string;
                                index: number;
                            }[];
                            model: string;
                            usage: {
                                prompt_tokens: number;
                                total_tokens: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                504: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deployments/create": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create a deployment
         * @description Serves a model with its own replica processes (between min_replicas and max_replicas) behind the gateway: clients send `model: <deployment_name>` to /v1/inference/chat/completions. Answers at once with status 'creating'.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Unique per tenant; the `model` clients send to the gateway */
                        deployment_name: string;
                        /** @description A pulled GGUF model (GET /v1/inference/models lists them), or a model the operator allowed a server command for */
                        model_name: string;
                        /** @description 'cpu' (default), 'gpu' or 'dedicated' */
                        hw_type?: string;
                        /** @description A GPU of this host (GET /v1/accelerators); absent or empty for CPU */
                        gpu_model?: string;
                        gpu_count?: number;
                        /** @description Replicas always running (default 1) */
                        min_replicas?: number;
                        /** @description Most replicas under load (default min_replicas) */
                        max_replicas?: number;
                    } & {
                        [key: string]: unknown;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            deployment_id: string;
                            message: string;
                            /** @description 'creating' at first; then 'running', or 'failed' with a reason */
                            status: string;
                            deployment_name: string;
                            /** @enum {object|null} */
                            user_email: never | null;
                            model_name: string;
                            /** Format: date-time */
                            created_at: string;
                            hw_type: string;
                            gpu_model: string | null;
                            gpu_count: number;
                            min_replicas: number;
                            max_replicas: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                429: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deployments/list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List deployments */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            deployments: {
                                deployment_id: string;
                                deployment_name: string;
                                user_email: string | null;
                                model_name: string;
                                /** @description creating, running, failed or deleting */
                                status: string;
                                /** @description Why the deployment failed */
                                reason: string | null;
                                /** Format: date-time */
                                created_at: string;
                                hw_type: string;
                                gpu_model: string | null;
                                gpu_count: number;
                                min_replicas: number;
                                max_replicas: number;
                                /** @description The node that runs its replicas (AGENTBOX_NODE_ID); in a cluster, another node once that one is lost */
                                node_id: string | null;
                                replicas: {
                                    replica_id: string;
                                    /** @description starting, ready, restarting, stopping, stopped or failed */
                                    state: string;
                                    pid: number | null;
                                    in_flight: number;
                                    /** @description Times the replica's process was started again after it died or stopped answering */
                                    restarts: number;
                                }[];
                                /** @description Requests waiting for a free replica now */
                                queued: number;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deployments/{deployment_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a deployment
         * @description Its status (and why it failed), bounds, replicas and queue.
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    deployment_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            deployment_id: string;
                            deployment_name: string;
                            user_email: string | null;
                            model_name: string;
                            /** @description creating, running, failed or deleting */
                            status: string;
                            /** @description Why the deployment failed */
                            reason: string | null;
                            /** Format: date-time */
                            created_at: string;
                            hw_type: string;
                            gpu_model: string | null;
                            gpu_count: number;
                            min_replicas: number;
                            max_replicas: number;
                            /** @description The node that runs its replicas (AGENTBOX_NODE_ID); in a cluster, another node once that one is lost */
                            node_id: string | null;
                            replicas: {
                                replica_id: string;
                                /** @description starting, ready, restarting, stopping, stopped or failed */
                                state: string;
                                pid: number | null;
                                in_flight: number;
                                /** @description Times the replica's process was started again after it died or stopped answering */
                                restarts: number;
                            }[];
                            /** @description Requests waiting for a free replica now */
                            queued: number;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/deployments/delete/{deployment_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Delete a deployment
         * @description The gateway stops routing its name at once; requests already running or queued finish, then its replicas stop and it is gone.
         */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    deployment_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            deployment_id: string;
                            /** @description 'deleting': running requests finish, then the replicas stop */
                            status: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/accelerators": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This host's hardware for deployments
         * @description The CPU (model, cores, memory) and NVIDIA GPUs (from nvidia-smi, when present).
         */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            accelerators: {
                                /** @description 'cpu', or 'gpu-<index>' */
                                accelerator_id: string;
                                /** @description 'cpu' or 'gpu' */
                                hw_type: string;
                                hw_model: string;
                                hw_link: string;
                                /** @description GiB */
                                hw_memory: number;
                                /** @description Cores for the CPU; 1 per GPU */
                                count: number;
                                pricing: number;
                                provider: string;
                                status: string;
                                /** Format: date-time */
                                updated_at: string;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/indexes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List vector indexes */
        get: {
            parameters: {
                query?: {
                    /** @description Page number, from 1 (default 1) */
                    page?: string;
                    /** @description Items per page, 1-1000 (default 100) */
                    page_size?: string;
                };
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            indexes: {
                                id: string;
                                name: string;
                                dimension: number;
                                metric: string;
                                vector_type: string;
                                cloud_provider: string | null;
                                region: string | null;
                                index_type: string | null;
                                /** @description Free-form JSON object (at most 40 KB serialized) */
                                metadata: {
                                    [key: string]: unknown;
                                };
                                delete_protection: boolean;
                                created_at: string;
                                updated_at: string;
                                /** @description loading: its records are being read after a start (writes are accepted; searches are exact, answered from the stored records); building: its graph is loading or being rebuilt (searches are exact meanwhile); indexing: recent writes are joining the graph (they are searched exactly meanwhile); ready */
                                status: "loading" | "building" | "indexing" | "ready";
                                vector_count: number;
                                /** @description Candidates an unfiltered graph search walks (adapted to target_recall) */
                                search_width: number;
                                target_recall: number;
                                /** @description recall@10 measured at search_width on a sample of the index's own vectors (null until measured: at 1,000 vectors) */
                                estimated_recall: number | null;
                                recall_measured_at: string | null;
                            }[];
                            pagination: {
                                page: number;
                                page_size: number;
                                total: number;
                                total_pages: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        /** Create a vector index */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path?: never;
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        name: string;
                        dimension: number;
                        /** @description Default cosine */
                        metric?: "cosine" | "euclidean" | "dotproduct" | "dot_product";
                        /** @enum {string} */
                        vector_type?: "dense";
                        /** @description Accepted and echoed */
                        cloud_provider?: string;
                        /** @description Accepted and echoed */
                        region?: string;
                        /** @description Accepted and echoed */
                        index_type?: string;
                        /** @description Free-form JSON object (at most 40 KB serialized) */
                        metadata?: {
                            [key: string]: unknown;
                        };
                        delete_protection?: boolean;
                        /** @description recall@10 the index's graph searches should reach (default 0.97): the index measures its recall on a sample of its own vectors and widens or narrows its search width to keep it */
                        target_recall?: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            name: string;
                            dimension: number;
                            metric: string;
                            vector_type: string;
                            cloud_provider: string | null;
                            region: string | null;
                            index_type: string | null;
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata: {
                                [key: string]: unknown;
                            };
                            delete_protection: boolean;
                            created_at: string;
                            updated_at: string;
                            /** @description loading: its records are being read after a start (writes are accepted; searches are exact, answered from the stored records); building: its graph is loading or being rebuilt (searches are exact meanwhile); indexing: recent writes are joining the graph (they are searched exactly meanwhile); ready */
                            status: "loading" | "building" | "indexing" | "ready";
                            vector_count: number;
                            /** @description Candidates an unfiltered graph search walks (adapted to target_recall) */
                            search_width: number;
                            target_recall: number;
                            /** @description recall@10 measured at search_width on a sample of the index's own vectors (null until measured: at 1,000 vectors) */
                            estimated_recall: number | null;
                            recall_measured_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/indexes/{index_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a vector index (by id or name) */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            name: string;
                            dimension: number;
                            metric: string;
                            vector_type: string;
                            cloud_provider: string | null;
                            region: string | null;
                            index_type: string | null;
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata: {
                                [key: string]: unknown;
                            };
                            delete_protection: boolean;
                            created_at: string;
                            updated_at: string;
                            /** @description loading: its records are being read after a start (writes are accepted; searches are exact, answered from the stored records); building: its graph is loading or being rebuilt (searches are exact meanwhile); indexing: recent writes are joining the graph (they are searched exactly meanwhile); ready */
                            status: "loading" | "building" | "indexing" | "ready";
                            vector_count: number;
                            /** @description Candidates an unfiltered graph search walks (adapted to target_recall) */
                            search_width: number;
                            target_recall: number;
                            /** @description recall@10 measured at search_width on a sample of the index's own vectors (null until measured: at 1,000 vectors) */
                            estimated_recall: number | null;
                            recall_measured_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        /** Update a vector index's metadata or delete protection */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Free-form JSON object (at most 40 KB serialized) */
                        metadata?: {
                            [key: string]: unknown;
                        };
                        delete_protection?: boolean;
                        /** @description recall@10 the index's graph searches should reach (default 0.97): the index measures its recall on a sample of its own vectors and widens or narrows its search width to keep it */
                        target_recall?: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            name: string;
                            dimension: number;
                            metric: string;
                            vector_type: string;
                            cloud_provider: string | null;
                            region: string | null;
                            index_type: string | null;
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata: {
                                [key: string]: unknown;
                            };
                            delete_protection: boolean;
                            created_at: string;
                            updated_at: string;
                            /** @description loading: its records are being read after a start (writes are accepted; searches are exact, answered from the stored records); building: its graph is loading or being rebuilt (searches are exact meanwhile); indexing: recent writes are joining the graph (they are searched exactly meanwhile); ready */
                            status: "loading" | "building" | "indexing" | "ready";
                            vector_count: number;
                            /** @description Candidates an unfiltered graph search walks (adapted to target_recall) */
                            search_width: number;
                            target_recall: number;
                            /** @description recall@10 measured at search_width on a sample of the index's own vectors (null until measured: at 1,000 vectors) */
                            estimated_recall: number | null;
                            recall_measured_at: string | null;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        post?: never;
        /**
         * Delete a vector index and its vectors
         * @description Refused (409) while delete_protection is on.
         */
        delete: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            message: string;
                            id: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/upsert": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Upsert vectors */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        vectors: {
                            /** @description Generated when absent */
                            id?: string;
                            embedding: number[];
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata?: {
                                [key: string]: unknown;
                            };
                            delete_protection?: boolean;
                        }[];
                    } | {
                        /** @description Generated when absent */
                        id?: string;
                        embedding: number[];
                        /** @description Free-form JSON object (at most 40 KB serialized) */
                        metadata?: {
                            [key: string]: unknown;
                        };
                        delete_protection?: boolean;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            ids: string[];
                            count: number;
                            upserted_count: number;
                            failed_count: number;
                            errors: string[];
                            usage?: {
                                prompt_tokens: number;
                                total_tokens: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Upsert a batch of vectors (up to 1000) */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        vectors: {
                            /** @description Generated when absent */
                            id?: string;
                            embedding: number[];
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata?: {
                                [key: string]: unknown;
                            };
                            delete_protection?: boolean;
                        }[];
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            ids: string[];
                            count: number;
                            upserted_count: number;
                            failed_count: number;
                            errors: string[];
                            usage?: {
                                prompt_tokens: number;
                                total_tokens: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/text/upsert": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upsert texts as vectors
         * @description The texts are embedded by the gateway (the default embedding model when `model` is absent).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        vectors: {
                            /** @description Generated when absent */
                            id?: string;
                            text: string;
                            /** @description Embedding model; the default model when absent */
                            model?: string;
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata?: {
                                [key: string]: unknown;
                            };
                            delete_protection?: boolean;
                        }[];
                    } | {
                        /** @description Generated when absent */
                        id?: string;
                        text: string;
                        /** @description Embedding model; the default model when absent */
                        model?: string;
                        /** @description Free-form JSON object (at most 40 KB serialized) */
                        metadata?: {
                            [key: string]: unknown;
                        };
                        delete_protection?: boolean;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            ids: string[];
                            count: number;
                            upserted_count: number;
                            failed_count: number;
                            errors: string[];
                            usage?: {
                                prompt_tokens: number;
                                total_tokens: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/text/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Upsert a batch of texts as vectors
         * @description The texts are embedded by the gateway (the default embedding model when `model` is absent).
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        vectors: {
                            /** @description Generated when absent */
                            id?: string;
                            text: string;
                            /** @description Embedding model; the default model when absent */
                            model?: string;
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata?: {
                                [key: string]: unknown;
                            };
                            delete_protection?: boolean;
                        }[];
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            ids: string[];
                            count: number;
                            upserted_count: number;
                            failed_count: number;
                            errors: string[];
                            usage?: {
                                prompt_tokens: number;
                                total_tokens: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                413: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Search by vector
         * @description Nearest first. A filter is applied during the search: the result is the best top_k among matching vectors.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        vector: number[];
                        /** @description Default 10 */
                        top_k?: number;
                        /** @description Metadata filter: {field: value}, {field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists: ...}}, $and/$or arrays */
                        filter?: {
                            [key: string]: unknown;
                        };
                        /** @description Default true */
                        include_metadata?: boolean;
                        /** @description Default false */
                        include_values?: boolean;
                        /** @description Score every vector exactly instead of searching the graph (slower; default false) */
                        exact?: boolean;
                        /** @description Candidates the graph walks for this search instead of the index's search_width (higher: better recall, slower) */
                        search_width?: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            hits: {
                                id: string;
                                /** @description Cosine similarity, dot product, or Euclidean distance (by the index's metric) */
                                score: number;
                                values?: number[];
                                /** @description Free-form JSON object (at most 40 KB serialized) */
                                metadata?: {
                                    [key: string]: unknown;
                                };
                            }[];
                            query_time_ms: number;
                            usage?: {
                                prompt_tokens: number;
                                total_tokens: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/search/text": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Search by text */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        query: string;
                        model?: string;
                        /** @description Default 10 */
                        top_k?: number;
                        /** @description Metadata filter: {field: value}, {field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists: ...}}, $and/$or arrays */
                        filter?: {
                            [key: string]: unknown;
                        };
                        /** @description Default true */
                        include_metadata?: boolean;
                        /** @description Default false */
                        include_values?: boolean;
                        /** @description Score every vector exactly instead of searching the graph (slower; default false) */
                        exact?: boolean;
                        /** @description Candidates the graph walks for this search instead of the index's search_width (higher: better recall, slower) */
                        search_width?: number;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            hits: {
                                id: string;
                                /** @description Cosine similarity, dot product, or Euclidean distance (by the index's metric) */
                                score: number;
                                values?: number[];
                                /** @description Free-form JSON object (at most 40 KB serialized) */
                                metadata?: {
                                    [key: string]: unknown;
                                };
                            }[];
                            query_time_ms: number;
                            usage?: {
                                prompt_tokens: number;
                                total_tokens: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                502: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                503: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/delete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Delete vectors by id
         * @description All or nothing: refused (409) if any of them has delete protection on.
         */
        post: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        vector_ids: string[];
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            deleted_count: number;
                            message: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                409: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/list": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List vectors (by id) */
        get: {
            parameters: {
                query?: {
                    /** @description Page number, from 1 (default 1) */
                    page?: string;
                    /** @description Items per page, 1-1000 (default 100) */
                    page_size?: string;
                };
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            vectors: {
                                id: string;
                                embedding: number[];
                                /** @description Free-form JSON object (at most 40 KB serialized) */
                                metadata: {
                                    [key: string]: unknown;
                                };
                                delete_protection: boolean;
                                created_at: string;
                                updated_at: string;
                            }[];
                            pagination: {
                                page: number;
                                page_size: number;
                                total: number;
                                total_pages: number;
                            };
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/fetch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Fetch vectors by id */
        get: {
            parameters: {
                query: {
                    /** @description Comma-separated ids */
                    vector_ids: string;
                };
                header?: never;
                path: {
                    index: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            vectors: {
                                id: string;
                                embedding: number[];
                                /** @description Free-form JSON object (at most 40 KB serialized) */
                                metadata: {
                                    [key: string]: unknown;
                                };
                                delete_protection: boolean;
                                created_at: string;
                                updated_at: string;
                            }[];
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/vectors/{index}/{vector_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get one vector */
        get: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                    vector_id: string;
                };
                cookie?: never;
            };
            requestBody?: never;
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            embedding: number[];
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata: {
                                [key: string]: unknown;
                            };
                            delete_protection: boolean;
                            created_at: string;
                            updated_at: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        /** Update a vector's metadata or delete protection */
        put: {
            parameters: {
                query?: never;
                header?: never;
                path: {
                    index: string;
                    vector_id: string;
                };
                cookie?: never;
            };
            requestBody: {
                content: {
                    "application/json": {
                        /** @description Free-form JSON object (at most 40 KB serialized) */
                        metadata?: {
                            [key: string]: unknown;
                        };
                        delete_protection?: boolean;
                    };
                };
            };
            responses: {
                /** @description Default Response */
                200: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": {
                            id: string;
                            embedding: number[];
                            /** @description Free-form JSON object (at most 40 KB serialized) */
                            metadata: {
                                [key: string]: unknown;
                            };
                            delete_protection: boolean;
                            created_at: string;
                            updated_at: string;
                        };
                    };
                };
                /** @description Every error response has this shape */
                400: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                401: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
                /** @description Every error response has this shape */
                404: {
                    headers: {
                        [name: string]: unknown;
                    };
                    content: {
                        "application/json": components["schemas"]["ErrorEnvelope"];
                    };
                };
            };
        };
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description Every error response has this shape */
        ErrorEnvelope: {
            error: {
                /** @description Stable machine-readable code, e.g. sandbox_not_found */
                code: string;
                /** @description Human-readable explanation */
                message: string;
            };
        };
        Sandbox: {
            sandbox_id: string;
            status: "running" | "paused" | "terminated" | "timed_out" | "failed";
            template: string;
            template_id: string;
            /** Format: date-time */
            started_at: string;
            /** Format: date-time */
            timeout_at: string;
            cpu_count: number;
            memory_mb: number;
            metadata: {
                [key: string]: unknown;
            };
            /** Format: date-time */
            ended_at: string | null;
        };
        CodeRunResult: {
            logs: {
                stdout: string;
                stderr: string;
            };
            /** @description null when the run reported no error */
            error: string | null;
            execution_time_ms: number;
            /** @description Rich results in the order they were produced: displayed objects, figures, and the value of the last expression (is_main_result). Always [] for bash. */
            results: {
                /** @description Plain text (repr / util.inspect) */
                text?: string;
                html?: string;
                markdown?: string;
                /** @description base64-encoded PNG */
                png?: string;
                /** @description base64-encoded JPEG */
                jpeg?: string;
                svg?: string;
                json?: unknown;
                latex?: string;
                /** @description The value of the cell's last expression */
                is_main_result?: boolean;
            }[];
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
