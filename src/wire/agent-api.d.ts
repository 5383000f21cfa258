/**
 * The agent API's wire contract, written once: every request and response body as a zod schema.
 * The server's types are inferred from these, the OpenAPI document (src/server/openapi.ts) is
 * generated from them, and so are the client's dependency-free types (`npm run gen:wire` →
 * src/client/wire-types.ts). Change a body here and nowhere else.
 */
import { z } from "zod";
import { ActionOutcome, Outcome } from "../plan/outcome.ts";
import { AppliedPolicy, HttpJsonAction, PlanDocument, PlannedAction, PlanRequest, Precondition } from "../plan/schema.ts";
import type { ErrorCode as ServiceErrorCode } from "../service/errors.ts";
export { ActionOutcome, AppliedPolicy, HttpJsonAction, Outcome, PlanDocument, PlannedAction, PlanRequest, Precondition };
/** The one JSON-value schema of src/plan/schema.ts (`z.json()`), shared by every body and state. */
export declare const JsonValue: z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>;
export declare const Change: z.ZodObject<{
    path: z.ZodString;
    from: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
    to: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
}, z.core.$strict>;
export type Change = z.output<typeof Change>;
/** What the preview shows a reviewer for one action; not hashed itself, but its digests are. */
export declare const ActionPreview: z.ZodObject<{
    target: z.ZodString;
    path: z.ZodString;
    op: z.ZodEnum<{
        create: "create";
        delete: "delete";
        merge: "merge";
        replace: "replace";
    }>;
    before: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
    after: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
    version: z.ZodNullable<z.ZodString>;
    changes: z.ZodArray<z.ZodObject<{
        path: z.ZodString;
        from: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
        to: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
    }, z.core.$strict>>;
    precondition: z.ZodOptional<z.ZodEnum<{
        absent: "absent";
        digest: "digest";
        etag: "etag";
    }>>;
}, z.core.$strict>;
export type ActionPreview = z.output<typeof ActionPreview>;
export declare const Approval: z.ZodObject<{
    userId: z.ZodString;
    via: z.ZodEnum<{
        slack: "slack";
        web: "web";
    }>;
    at: z.ZodISODateTime;
}, z.core.$strict>;
export type Approval = z.output<typeof Approval>;
export declare const Rejection: z.ZodObject<{
    userId: z.ZodString;
    via: z.ZodEnum<{
        slack: "slack";
        web: "web";
    }>;
    reason: z.ZodString;
    at: z.ZodISODateTime;
}, z.core.$strict>;
export type Rejection = z.output<typeof Rejection>;
export declare const PlanStatus: z.ZodEnum<{
    applied: "applied";
    approved: "approved";
    cancelled: "cancelled";
    executing: "executing";
    expired: "expired";
    failed: "failed";
    pending: "pending";
    rejected: "rejected";
    stale: "stale";
}>;
export type PlanStatus = z.output<typeof PlanStatus>;
/** How a plan is shown to the agent that submitted it (and, redacted, to reviewers): the API's one representation of a plan. */
export declare const PlanView: z.ZodObject<{
    id: z.ZodUUID;
    hash: z.ZodString;
    status: z.ZodEnum<{
        applied: "applied";
        approved: "approved";
        cancelled: "cancelled";
        executing: "executing";
        expired: "expired";
        failed: "failed";
        pending: "pending";
        rejected: "rejected";
        stale: "stale";
    }>;
    expiresAt: z.ZodISODateTime;
    reviewUrl: z.ZodURL;
    createdAt: z.ZodISODateTime;
    plan: z.ZodObject<{
        v: z.ZodLiteral<1>;
        id: z.ZodUUID;
        environment: z.ZodString;
        agent: z.ZodString;
        title: z.ZodString;
        reason: z.ZodOptional<z.ZodString>;
        onBehalfOf: z.ZodOptional<z.ZodString>;
        actions: z.ZodArray<z.ZodObject<{
            kind: z.ZodLiteral<"http.json">;
            target: z.ZodString;
            path: z.ZodString;
            op: z.ZodEnum<{
                create: "create";
                delete: "delete";
                merge: "merge";
                replace: "replace";
            }>;
            body: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
            precondition: z.ZodUnion<readonly [z.ZodObject<{
                etag: z.ZodString;
            }, z.core.$strict>, z.ZodObject<{
                digest: z.ZodString;
            }, z.core.$strict>, z.ZodObject<{
                absent: z.ZodLiteral<true>;
            }, z.core.$strict>]>;
            beforeDigest: z.ZodString;
            afterDigest: z.ZodString;
        }, z.core.$strict>>;
        policy: z.ZodObject<{
            approvers: z.ZodArray<z.ZodString>;
            requiredApprovals: z.ZodInt;
            grantTtlSeconds: z.ZodInt;
            rule: z.ZodOptional<z.ZodString>;
            risk: z.ZodOptional<z.ZodObject<{
                level: z.ZodEnum<{
                    high: "high";
                    low: "low";
                    medium: "medium";
                }>;
                rule: z.ZodString;
            }, z.core.$strict>>;
        }, z.core.$strict>;
        expiresAt: z.ZodISODateTime;
    }, z.core.$strict>;
    preview: z.ZodObject<{
        actions: z.ZodArray<z.ZodObject<{
            target: z.ZodString;
            path: z.ZodString;
            op: z.ZodEnum<{
                create: "create";
                delete: "delete";
                merge: "merge";
                replace: "replace";
            }>;
            before: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
            after: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
            version: z.ZodNullable<z.ZodString>;
            changes: z.ZodArray<z.ZodObject<{
                path: z.ZodString;
                from: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
                to: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
            }, z.core.$strict>>;
            precondition: z.ZodOptional<z.ZodEnum<{
                absent: "absent";
                digest: "digest";
                etag: "etag";
            }>>;
        }, z.core.$strict>>;
    }, z.core.$strict>;
    approvals: z.ZodArray<z.ZodObject<{
        userId: z.ZodString;
        via: z.ZodEnum<{
            slack: "slack";
            web: "web";
        }>;
        at: z.ZodISODateTime;
    }, z.core.$strict>>;
    rejection: z.ZodOptional<z.ZodObject<{
        userId: z.ZodString;
        via: z.ZodEnum<{
            slack: "slack";
            web: "web";
        }>;
        reason: z.ZodString;
        at: z.ZodISODateTime;
    }, z.core.$strict>>;
    grantExpiresAt: z.ZodOptional<z.ZodISODateTime>;
    outcome: z.ZodOptional<z.ZodObject<{
        status: z.ZodEnum<{
            applied: "applied";
            expired: "expired";
            failed: "failed";
            stale: "stale";
        }>;
        reconciled: z.ZodOptional<z.ZodBoolean>;
        partial: z.ZodOptional<z.ZodBoolean>;
        reason: z.ZodOptional<z.ZodString>;
        actions: z.ZodArray<z.ZodObject<{
            index: z.ZodInt;
            target: z.ZodString;
            path: z.ZodString;
            status: z.ZodEnum<{
                applied: "applied";
                failed: "failed";
                skipped: "skipped";
                stale: "stale";
            }>;
            reconciled: z.ZodOptional<z.ZodBoolean>;
            detail: z.ZodOptional<z.ZodString>;
            expected: z.ZodOptional<z.ZodNullable<z.ZodString>>;
            now: z.ZodOptional<z.ZodNullable<z.ZodString>>;
            changedSincePreview: z.ZodOptional<z.ZodArray<z.ZodObject<{
                path: z.ZodString;
                from: z.ZodOptional<z.ZodJSONSchema>;
                to: z.ZodOptional<z.ZodJSONSchema>;
            }, z.core.$strict>>>;
        }, z.core.$strict>>;
    }, z.core.$strict>>;
}, z.core.$strict>;
export type PlanView = z.output<typeof PlanView>;
export declare const Actor: z.ZodDiscriminatedUnion<[z.ZodObject<{
    type: z.ZodLiteral<"agent">;
    agentId: z.ZodString;
    name: z.ZodString;
}, z.core.$strict>, z.ZodObject<{
    type: z.ZodLiteral<"user">;
    userId: z.ZodString;
    via: z.ZodEnum<{
        slack: "slack";
        web: "web";
    }>;
}, z.core.$strict>, z.ZodObject<{
    type: z.ZodLiteral<"system">;
    process: z.ZodString;
}, z.core.$strict>], "type">;
export type Actor = z.output<typeof Actor>;
export declare const AuditEvent: z.ZodObject<{
    id: z.ZodInt;
    type: z.ZodString;
    actor: z.ZodDiscriminatedUnion<[z.ZodObject<{
        type: z.ZodLiteral<"agent">;
        agentId: z.ZodString;
        name: z.ZodString;
    }, z.core.$strict>, z.ZodObject<{
        type: z.ZodLiteral<"user">;
        userId: z.ZodString;
        via: z.ZodEnum<{
            slack: "slack";
            web: "web";
        }>;
    }, z.core.$strict>, z.ZodObject<{
        type: z.ZodLiteral<"system">;
        process: z.ZodString;
    }, z.core.$strict>], "type">;
    data: z.ZodRecord<z.ZodString, z.ZodUnknown>;
    at: z.ZodISODateTime;
    hash: z.ZodString;
}, z.core.$strict>;
export type AuditEvent = z.output<typeof AuditEvent>;
export declare const PlanEvents: z.ZodObject<{
    events: z.ZodArray<z.ZodObject<{
        id: z.ZodInt;
        type: z.ZodString;
        actor: z.ZodDiscriminatedUnion<[z.ZodObject<{
            type: z.ZodLiteral<"agent">;
            agentId: z.ZodString;
            name: z.ZodString;
        }, z.core.$strict>, z.ZodObject<{
            type: z.ZodLiteral<"user">;
            userId: z.ZodString;
            via: z.ZodEnum<{
                slack: "slack";
                web: "web";
            }>;
        }, z.core.$strict>, z.ZodObject<{
            type: z.ZodLiteral<"system">;
            process: z.ZodString;
        }, z.core.$strict>], "type">;
        data: z.ZodRecord<z.ZodString, z.ZodUnknown>;
        at: z.ZodISODateTime;
        hash: z.ZodString;
    }, z.core.$strict>>;
}, z.core.$strict>;
export type PlanEvents = z.output<typeof PlanEvents>;
/**
 * Every code an HTTP answer can carry: the service's refusals (by the server's own status
 * table), `database_unavailable` (503 while the database cannot be reached) and `internal` (500).
 */
export declare const ERROR_CODES: readonly [...ServiceErrorCode[], "database_unavailable", "internal"];
export declare const ErrorCode: z.ZodEnum<{
    already_decided: "already_decided";
    already_voted: "already_voted";
    approver_check_failed: "approver_check_failed";
    conflict: "conflict";
    database_unavailable: "database_unavailable";
    hash_mismatch: "hash_mismatch";
    idempotency_conflict: "idempotency_conflict";
    internal: "internal";
    invalid_json: "invalid_json";
    invalid_request: "invalid_request";
    lease_lost: "lease_lost";
    not_a_reader: "not_a_reader";
    not_an_approver: "not_an_approver";
    not_found: "not_found";
    payload_too_large: "payload_too_large";
    plan_expired: "plan_expired";
    policy_denied: "policy_denied";
    preview_failed: "preview_failed";
    self_approval: "self_approval";
    unauthorized: "unauthorized";
    unknown_target: "unknown_target";
    unsupported_media_type: "unsupported_media_type";
}>;
export type ErrorCode = z.output<typeof ErrorCode>;
export declare const Issue: z.ZodObject<{
    path: z.ZodString;
    message: z.ZodString;
}, z.core.$strict>;
export type Issue = z.output<typeof Issue>;
export declare const ErrorBody: z.ZodObject<{
    error: z.ZodObject<{
        code: z.ZodEnum<{
            already_decided: "already_decided";
            already_voted: "already_voted";
            approver_check_failed: "approver_check_failed";
            conflict: "conflict";
            database_unavailable: "database_unavailable";
            hash_mismatch: "hash_mismatch";
            idempotency_conflict: "idempotency_conflict";
            internal: "internal";
            invalid_json: "invalid_json";
            invalid_request: "invalid_request";
            lease_lost: "lease_lost";
            not_a_reader: "not_a_reader";
            not_an_approver: "not_an_approver";
            not_found: "not_found";
            payload_too_large: "payload_too_large";
            plan_expired: "plan_expired";
            policy_denied: "policy_denied";
            preview_failed: "preview_failed";
            self_approval: "self_approval";
            unauthorized: "unauthorized";
            unknown_target: "unknown_target";
            unsupported_media_type: "unsupported_media_type";
        }>;
        message: z.ZodString;
        issues: z.ZodOptional<z.ZodArray<z.ZodObject<{
            path: z.ZodString;
            message: z.ZodString;
        }, z.core.$strict>>>;
        details: z.ZodOptional<z.ZodRecord<z.ZodString, z.ZodUnknown>>;
    }, z.core.$strict>;
}, z.core.$strict>;
export type ErrorBody = z.output<typeof ErrorBody>;
/** What a plan's callback URL receives on every status change, signed (`Countersign-Signature`). */
export declare const WebhookPayload: z.ZodObject<{
    planId: z.ZodUUID;
    hash: z.ZodString;
    status: z.ZodEnum<{
        applied: "applied";
        approved: "approved";
        cancelled: "cancelled";
        executing: "executing";
        expired: "expired";
        failed: "failed";
        pending: "pending";
        rejected: "rejected";
        stale: "stale";
    }>;
    approvals: z.ZodArray<z.ZodObject<{
        userId: z.ZodString;
        via: z.ZodEnum<{
            slack: "slack";
            web: "web";
        }>;
        at: z.ZodISODateTime;
    }, z.core.$strict>>;
    reason: z.ZodOptional<z.ZodString>;
    outcome: z.ZodOptional<z.ZodObject<{
        status: z.ZodEnum<{
            applied: "applied";
            expired: "expired";
            failed: "failed";
            stale: "stale";
        }>;
        reconciled: z.ZodOptional<z.ZodBoolean>;
        partial: z.ZodOptional<z.ZodBoolean>;
        reason: z.ZodOptional<z.ZodString>;
        actions: z.ZodArray<z.ZodObject<{
            index: z.ZodInt;
            target: z.ZodString;
            path: z.ZodString;
            status: z.ZodEnum<{
                applied: "applied";
                failed: "failed";
                skipped: "skipped";
                stale: "stale";
            }>;
            reconciled: z.ZodOptional<z.ZodBoolean>;
            detail: z.ZodOptional<z.ZodString>;
            expected: z.ZodOptional<z.ZodNullable<z.ZodString>>;
            now: z.ZodOptional<z.ZodNullable<z.ZodString>>;
            changedSincePreview: z.ZodOptional<z.ZodArray<z.ZodObject<{
                path: z.ZodString;
                from: z.ZodOptional<z.ZodJSONSchema>;
                to: z.ZodOptional<z.ZodJSONSchema>;
            }, z.core.$strict>>>;
        }, z.core.$strict>>;
    }, z.core.$strict>>;
}, z.core.$strict>;
export type WebhookPayload = z.output<typeof WebhookPayload>;
/** The agent's plan request as sent (before trimming and defaults): what a client may pass. */
export type PlanRequestInput = z.input<typeof PlanRequest>;
/** Named components of the contract, in the order they are listed. Request bodies are described as input. */
export declare const REQUEST_COMPONENTS: {
    readonly PlanRequest: z.ZodObject<{
        title: z.ZodString;
        reason: z.ZodOptional<z.ZodString>;
        actions: z.ZodArray<z.ZodDiscriminatedUnion<[z.ZodObject<{
            kind: z.ZodLiteral<"http.json">;
            target: z.ZodString;
            path: z.ZodString;
            op: z.ZodEnum<{
                create: "create";
                delete: "delete";
                merge: "merge";
                replace: "replace";
            }>;
            body: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
        }, z.core.$strict>], "kind">>;
        ttlSeconds: z.ZodOptional<z.ZodInt>;
        onBehalfOf: z.ZodOptional<z.ZodString>;
        idempotencyKey: z.ZodOptional<z.ZodString>;
        callbackUrl: z.ZodOptional<z.ZodURL>;
    }, z.core.$strict>;
    readonly HttpJsonAction: z.ZodObject<{
        kind: z.ZodLiteral<"http.json">;
        target: z.ZodString;
        path: z.ZodString;
        op: z.ZodEnum<{
            create: "create";
            delete: "delete";
            merge: "merge";
            replace: "replace";
        }>;
        body: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
    }, z.core.$strict>;
    readonly JsonValue: z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>;
};
export declare const RESPONSE_COMPONENTS: {
    readonly PlanView: z.ZodObject<{
        id: z.ZodUUID;
        hash: z.ZodString;
        status: z.ZodEnum<{
            applied: "applied";
            approved: "approved";
            cancelled: "cancelled";
            executing: "executing";
            expired: "expired";
            failed: "failed";
            pending: "pending";
            rejected: "rejected";
            stale: "stale";
        }>;
        expiresAt: z.ZodISODateTime;
        reviewUrl: z.ZodURL;
        createdAt: z.ZodISODateTime;
        plan: z.ZodObject<{
            v: z.ZodLiteral<1>;
            id: z.ZodUUID;
            environment: z.ZodString;
            agent: z.ZodString;
            title: z.ZodString;
            reason: z.ZodOptional<z.ZodString>;
            onBehalfOf: z.ZodOptional<z.ZodString>;
            actions: z.ZodArray<z.ZodObject<{
                kind: z.ZodLiteral<"http.json">;
                target: z.ZodString;
                path: z.ZodString;
                op: z.ZodEnum<{
                    create: "create";
                    delete: "delete";
                    merge: "merge";
                    replace: "replace";
                }>;
                body: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
                precondition: z.ZodUnion<readonly [z.ZodObject<{
                    etag: z.ZodString;
                }, z.core.$strict>, z.ZodObject<{
                    digest: z.ZodString;
                }, z.core.$strict>, z.ZodObject<{
                    absent: z.ZodLiteral<true>;
                }, z.core.$strict>]>;
                beforeDigest: z.ZodString;
                afterDigest: z.ZodString;
            }, z.core.$strict>>;
            policy: z.ZodObject<{
                approvers: z.ZodArray<z.ZodString>;
                requiredApprovals: z.ZodInt;
                grantTtlSeconds: z.ZodInt;
                rule: z.ZodOptional<z.ZodString>;
                risk: z.ZodOptional<z.ZodObject<{
                    level: z.ZodEnum<{
                        high: "high";
                        low: "low";
                        medium: "medium";
                    }>;
                    rule: z.ZodString;
                }, z.core.$strict>>;
            }, z.core.$strict>;
            expiresAt: z.ZodISODateTime;
        }, z.core.$strict>;
        preview: z.ZodObject<{
            actions: z.ZodArray<z.ZodObject<{
                target: z.ZodString;
                path: z.ZodString;
                op: z.ZodEnum<{
                    create: "create";
                    delete: "delete";
                    merge: "merge";
                    replace: "replace";
                }>;
                before: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
                after: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
                version: z.ZodNullable<z.ZodString>;
                changes: z.ZodArray<z.ZodObject<{
                    path: z.ZodString;
                    from: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
                    to: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
                }, z.core.$strict>>;
                precondition: z.ZodOptional<z.ZodEnum<{
                    absent: "absent";
                    digest: "digest";
                    etag: "etag";
                }>>;
            }, z.core.$strict>>;
        }, z.core.$strict>;
        approvals: z.ZodArray<z.ZodObject<{
            userId: z.ZodString;
            via: z.ZodEnum<{
                slack: "slack";
                web: "web";
            }>;
            at: z.ZodISODateTime;
        }, z.core.$strict>>;
        rejection: z.ZodOptional<z.ZodObject<{
            userId: z.ZodString;
            via: z.ZodEnum<{
                slack: "slack";
                web: "web";
            }>;
            reason: z.ZodString;
            at: z.ZodISODateTime;
        }, z.core.$strict>>;
        grantExpiresAt: z.ZodOptional<z.ZodISODateTime>;
        outcome: z.ZodOptional<z.ZodObject<{
            status: z.ZodEnum<{
                applied: "applied";
                expired: "expired";
                failed: "failed";
                stale: "stale";
            }>;
            reconciled: z.ZodOptional<z.ZodBoolean>;
            partial: z.ZodOptional<z.ZodBoolean>;
            reason: z.ZodOptional<z.ZodString>;
            actions: z.ZodArray<z.ZodObject<{
                index: z.ZodInt;
                target: z.ZodString;
                path: z.ZodString;
                status: z.ZodEnum<{
                    applied: "applied";
                    failed: "failed";
                    skipped: "skipped";
                    stale: "stale";
                }>;
                reconciled: z.ZodOptional<z.ZodBoolean>;
                detail: z.ZodOptional<z.ZodString>;
                expected: z.ZodOptional<z.ZodNullable<z.ZodString>>;
                now: z.ZodOptional<z.ZodNullable<z.ZodString>>;
                changedSincePreview: z.ZodOptional<z.ZodArray<z.ZodObject<{
                    path: z.ZodString;
                    from: z.ZodOptional<z.ZodJSONSchema>;
                    to: z.ZodOptional<z.ZodJSONSchema>;
                }, z.core.$strict>>>;
            }, z.core.$strict>>;
        }, z.core.$strict>>;
    }, z.core.$strict>;
    readonly PlanStatus: z.ZodEnum<{
        applied: "applied";
        approved: "approved";
        cancelled: "cancelled";
        executing: "executing";
        expired: "expired";
        failed: "failed";
        pending: "pending";
        rejected: "rejected";
        stale: "stale";
    }>;
    readonly PlanDocument: z.ZodObject<{
        v: z.ZodLiteral<1>;
        id: z.ZodUUID;
        environment: z.ZodString;
        agent: z.ZodString;
        title: z.ZodString;
        reason: z.ZodOptional<z.ZodString>;
        onBehalfOf: z.ZodOptional<z.ZodString>;
        actions: z.ZodArray<z.ZodObject<{
            kind: z.ZodLiteral<"http.json">;
            target: z.ZodString;
            path: z.ZodString;
            op: z.ZodEnum<{
                create: "create";
                delete: "delete";
                merge: "merge";
                replace: "replace";
            }>;
            body: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
            precondition: z.ZodUnion<readonly [z.ZodObject<{
                etag: z.ZodString;
            }, z.core.$strict>, z.ZodObject<{
                digest: z.ZodString;
            }, z.core.$strict>, z.ZodObject<{
                absent: z.ZodLiteral<true>;
            }, z.core.$strict>]>;
            beforeDigest: z.ZodString;
            afterDigest: z.ZodString;
        }, z.core.$strict>>;
        policy: z.ZodObject<{
            approvers: z.ZodArray<z.ZodString>;
            requiredApprovals: z.ZodInt;
            grantTtlSeconds: z.ZodInt;
            rule: z.ZodOptional<z.ZodString>;
            risk: z.ZodOptional<z.ZodObject<{
                level: z.ZodEnum<{
                    high: "high";
                    low: "low";
                    medium: "medium";
                }>;
                rule: z.ZodString;
            }, z.core.$strict>>;
        }, z.core.$strict>;
        expiresAt: z.ZodISODateTime;
    }, z.core.$strict>;
    readonly PlannedAction: z.ZodObject<{
        kind: z.ZodLiteral<"http.json">;
        target: z.ZodString;
        path: z.ZodString;
        op: z.ZodEnum<{
            create: "create";
            delete: "delete";
            merge: "merge";
            replace: "replace";
        }>;
        body: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
        precondition: z.ZodUnion<readonly [z.ZodObject<{
            etag: z.ZodString;
        }, z.core.$strict>, z.ZodObject<{
            digest: z.ZodString;
        }, z.core.$strict>, z.ZodObject<{
            absent: z.ZodLiteral<true>;
        }, z.core.$strict>]>;
        beforeDigest: z.ZodString;
        afterDigest: z.ZodString;
    }, z.core.$strict>;
    readonly Precondition: z.ZodUnion<readonly [z.ZodObject<{
        etag: z.ZodString;
    }, z.core.$strict>, z.ZodObject<{
        digest: z.ZodString;
    }, z.core.$strict>, z.ZodObject<{
        absent: z.ZodLiteral<true>;
    }, z.core.$strict>]>;
    readonly AppliedPolicy: z.ZodObject<{
        approvers: z.ZodArray<z.ZodString>;
        requiredApprovals: z.ZodInt;
        grantTtlSeconds: z.ZodInt;
        rule: z.ZodOptional<z.ZodString>;
        risk: z.ZodOptional<z.ZodObject<{
            level: z.ZodEnum<{
                high: "high";
                low: "low";
                medium: "medium";
            }>;
            rule: z.ZodString;
        }, z.core.$strict>>;
    }, z.core.$strict>;
    readonly ActionPreview: z.ZodObject<{
        target: z.ZodString;
        path: z.ZodString;
        op: z.ZodEnum<{
            create: "create";
            delete: "delete";
            merge: "merge";
            replace: "replace";
        }>;
        before: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
        after: z.ZodNullable<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
        version: z.ZodNullable<z.ZodString>;
        changes: z.ZodArray<z.ZodObject<{
            path: z.ZodString;
            from: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
            to: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
        }, z.core.$strict>>;
        precondition: z.ZodOptional<z.ZodEnum<{
            absent: "absent";
            digest: "digest";
            etag: "etag";
        }>>;
    }, z.core.$strict>;
    readonly Change: z.ZodObject<{
        path: z.ZodString;
        from: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
        to: z.ZodOptional<z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>>;
    }, z.core.$strict>;
    readonly Approval: z.ZodObject<{
        userId: z.ZodString;
        via: z.ZodEnum<{
            slack: "slack";
            web: "web";
        }>;
        at: z.ZodISODateTime;
    }, z.core.$strict>;
    readonly Rejection: z.ZodObject<{
        userId: z.ZodString;
        via: z.ZodEnum<{
            slack: "slack";
            web: "web";
        }>;
        reason: z.ZodString;
        at: z.ZodISODateTime;
    }, z.core.$strict>;
    readonly Outcome: z.ZodObject<{
        status: z.ZodEnum<{
            applied: "applied";
            expired: "expired";
            failed: "failed";
            stale: "stale";
        }>;
        reconciled: z.ZodOptional<z.ZodBoolean>;
        partial: z.ZodOptional<z.ZodBoolean>;
        reason: z.ZodOptional<z.ZodString>;
        actions: z.ZodArray<z.ZodObject<{
            index: z.ZodInt;
            target: z.ZodString;
            path: z.ZodString;
            status: z.ZodEnum<{
                applied: "applied";
                failed: "failed";
                skipped: "skipped";
                stale: "stale";
            }>;
            reconciled: z.ZodOptional<z.ZodBoolean>;
            detail: z.ZodOptional<z.ZodString>;
            expected: z.ZodOptional<z.ZodNullable<z.ZodString>>;
            now: z.ZodOptional<z.ZodNullable<z.ZodString>>;
            changedSincePreview: z.ZodOptional<z.ZodArray<z.ZodObject<{
                path: z.ZodString;
                from: z.ZodOptional<z.ZodJSONSchema>;
                to: z.ZodOptional<z.ZodJSONSchema>;
            }, z.core.$strict>>>;
        }, z.core.$strict>>;
    }, z.core.$strict>;
    readonly ActionOutcome: z.ZodObject<{
        index: z.ZodInt;
        target: z.ZodString;
        path: z.ZodString;
        status: z.ZodEnum<{
            applied: "applied";
            failed: "failed";
            skipped: "skipped";
            stale: "stale";
        }>;
        reconciled: z.ZodOptional<z.ZodBoolean>;
        detail: z.ZodOptional<z.ZodString>;
        expected: z.ZodOptional<z.ZodNullable<z.ZodString>>;
        now: z.ZodOptional<z.ZodNullable<z.ZodString>>;
        changedSincePreview: z.ZodOptional<z.ZodArray<z.ZodObject<{
            path: z.ZodString;
            from: z.ZodOptional<z.ZodJSONSchema>;
            to: z.ZodOptional<z.ZodJSONSchema>;
        }, z.core.$strict>>>;
    }, z.core.$strict>;
    readonly PlanEvents: z.ZodObject<{
        events: z.ZodArray<z.ZodObject<{
            id: z.ZodInt;
            type: z.ZodString;
            actor: z.ZodDiscriminatedUnion<[z.ZodObject<{
                type: z.ZodLiteral<"agent">;
                agentId: z.ZodString;
                name: z.ZodString;
            }, z.core.$strict>, z.ZodObject<{
                type: z.ZodLiteral<"user">;
                userId: z.ZodString;
                via: z.ZodEnum<{
                    slack: "slack";
                    web: "web";
                }>;
            }, z.core.$strict>, z.ZodObject<{
                type: z.ZodLiteral<"system">;
                process: z.ZodString;
            }, z.core.$strict>], "type">;
            data: z.ZodRecord<z.ZodString, z.ZodUnknown>;
            at: z.ZodISODateTime;
            hash: z.ZodString;
        }, z.core.$strict>>;
    }, z.core.$strict>;
    readonly AuditEvent: z.ZodObject<{
        id: z.ZodInt;
        type: z.ZodString;
        actor: z.ZodDiscriminatedUnion<[z.ZodObject<{
            type: z.ZodLiteral<"agent">;
            agentId: z.ZodString;
            name: z.ZodString;
        }, z.core.$strict>, z.ZodObject<{
            type: z.ZodLiteral<"user">;
            userId: z.ZodString;
            via: z.ZodEnum<{
                slack: "slack";
                web: "web";
            }>;
        }, z.core.$strict>, z.ZodObject<{
            type: z.ZodLiteral<"system">;
            process: z.ZodString;
        }, z.core.$strict>], "type">;
        data: z.ZodRecord<z.ZodString, z.ZodUnknown>;
        at: z.ZodISODateTime;
        hash: z.ZodString;
    }, z.core.$strict>;
    readonly Actor: z.ZodDiscriminatedUnion<[z.ZodObject<{
        type: z.ZodLiteral<"agent">;
        agentId: z.ZodString;
        name: z.ZodString;
    }, z.core.$strict>, z.ZodObject<{
        type: z.ZodLiteral<"user">;
        userId: z.ZodString;
        via: z.ZodEnum<{
            slack: "slack";
            web: "web";
        }>;
    }, z.core.$strict>, z.ZodObject<{
        type: z.ZodLiteral<"system">;
        process: z.ZodString;
    }, z.core.$strict>], "type">;
    readonly ErrorBody: z.ZodObject<{
        error: z.ZodObject<{
            code: z.ZodEnum<{
                already_decided: "already_decided";
                already_voted: "already_voted";
                approver_check_failed: "approver_check_failed";
                conflict: "conflict";
                database_unavailable: "database_unavailable";
                hash_mismatch: "hash_mismatch";
                idempotency_conflict: "idempotency_conflict";
                internal: "internal";
                invalid_json: "invalid_json";
                invalid_request: "invalid_request";
                lease_lost: "lease_lost";
                not_a_reader: "not_a_reader";
                not_an_approver: "not_an_approver";
                not_found: "not_found";
                payload_too_large: "payload_too_large";
                plan_expired: "plan_expired";
                policy_denied: "policy_denied";
                preview_failed: "preview_failed";
                self_approval: "self_approval";
                unauthorized: "unauthorized";
                unknown_target: "unknown_target";
                unsupported_media_type: "unsupported_media_type";
            }>;
            message: z.ZodString;
            issues: z.ZodOptional<z.ZodArray<z.ZodObject<{
                path: z.ZodString;
                message: z.ZodString;
            }, z.core.$strict>>>;
            details: z.ZodOptional<z.ZodRecord<z.ZodString, z.ZodUnknown>>;
        }, z.core.$strict>;
    }, z.core.$strict>;
    readonly ErrorCode: z.ZodEnum<{
        already_decided: "already_decided";
        already_voted: "already_voted";
        approver_check_failed: "approver_check_failed";
        conflict: "conflict";
        database_unavailable: "database_unavailable";
        hash_mismatch: "hash_mismatch";
        idempotency_conflict: "idempotency_conflict";
        internal: "internal";
        invalid_json: "invalid_json";
        invalid_request: "invalid_request";
        lease_lost: "lease_lost";
        not_a_reader: "not_a_reader";
        not_an_approver: "not_an_approver";
        not_found: "not_found";
        payload_too_large: "payload_too_large";
        plan_expired: "plan_expired";
        policy_denied: "policy_denied";
        preview_failed: "preview_failed";
        self_approval: "self_approval";
        unauthorized: "unauthorized";
        unknown_target: "unknown_target";
        unsupported_media_type: "unsupported_media_type";
    }>;
    readonly Issue: z.ZodObject<{
        path: z.ZodString;
        message: z.ZodString;
    }, z.core.$strict>;
    readonly WebhookPayload: z.ZodObject<{
        planId: z.ZodUUID;
        hash: z.ZodString;
        status: z.ZodEnum<{
            applied: "applied";
            approved: "approved";
            cancelled: "cancelled";
            executing: "executing";
            expired: "expired";
            failed: "failed";
            pending: "pending";
            rejected: "rejected";
            stale: "stale";
        }>;
        approvals: z.ZodArray<z.ZodObject<{
            userId: z.ZodString;
            via: z.ZodEnum<{
                slack: "slack";
                web: "web";
            }>;
            at: z.ZodISODateTime;
        }, z.core.$strict>>;
        reason: z.ZodOptional<z.ZodString>;
        outcome: z.ZodOptional<z.ZodObject<{
            status: z.ZodEnum<{
                applied: "applied";
                expired: "expired";
                failed: "failed";
                stale: "stale";
            }>;
            reconciled: z.ZodOptional<z.ZodBoolean>;
            partial: z.ZodOptional<z.ZodBoolean>;
            reason: z.ZodOptional<z.ZodString>;
            actions: z.ZodArray<z.ZodObject<{
                index: z.ZodInt;
                target: z.ZodString;
                path: z.ZodString;
                status: z.ZodEnum<{
                    applied: "applied";
                    failed: "failed";
                    skipped: "skipped";
                    stale: "stale";
                }>;
                reconciled: z.ZodOptional<z.ZodBoolean>;
                detail: z.ZodOptional<z.ZodString>;
                expected: z.ZodOptional<z.ZodNullable<z.ZodString>>;
                now: z.ZodOptional<z.ZodNullable<z.ZodString>>;
                changedSincePreview: z.ZodOptional<z.ZodArray<z.ZodObject<{
                    path: z.ZodString;
                    from: z.ZodOptional<z.ZodJSONSchema>;
                    to: z.ZodOptional<z.ZodJSONSchema>;
                }, z.core.$strict>>>;
            }, z.core.$strict>>;
        }, z.core.$strict>>;
    }, z.core.$strict>;
    readonly JsonValue: z.ZodType<import("../plan/json.ts").Json, unknown, z.core.$ZodTypeInternals<import("../plan/json.ts").Json, unknown>>;
};
