// Package acl is kbroker's ACL authorizer, Kafka's StandardAuthorizer: it
// decides from the ACLs of the local metadata image (metadata.ACLs)
// whether a principal, connecting from a host, may perform an operation on
// a resource.
//
// # Decision
//
// For one action (principal P, host H, operation O, resource of type T
// named N):
//
//  1. A super user (super.users) is allowed everything.
//  2. The ACLs whose resource pattern matches the resource are those of
//     type T that are LITERAL on N, LITERAL on "*", or PREFIXED on a
//     prefix of N. If there is none, the action is allowed exactly when
//     allow.everyone.if.no.acl.found is true.
//  3. Of those, an ACL applies when its principal is P or "User:*" and its
//     host is H or "*".
//  4. A DENY ACL whose operation is O or ALL denies the action, whatever
//     else allows it (DENY wins).
//  5. Else an ALLOW ACL whose operation is O or ALL, or one that implies
//     O, allows it: READ, WRITE, DELETE and ALTER imply DESCRIBE;
//     ALTER_CONFIGS implies DESCRIBE_CONFIGS. Implication does not apply
//     to DENY (denying READ does not deny DESCRIBE).
//  6. Else the action is denied.
//
// AuthorizeAny answers Kafka's authorizeByResourceType, which
// InitProducerId uses for idempotent producers ("WRITE on any topic"):
// allowed when the action on a resource of the type with a name no ACL
// names would be allowed (super users, allow.everyone.if.no.acl.found,
// LITERAL "*" ALLOW), or when some applicable ALLOW ACL of the type
// names a pattern that no applicable DENY ACL covers (a DENY on the
// literal name, or on a prefix of it); a DENY LITERAL "*" denies all.
//
// # Cache
//
// Decisions are cached per (principal, host, operation, resource type,
// name) for the ACL version of the image (metadata.Image.ACLVersion): the
// first decision asked against a newer version drops the whole cache. The
// cache holds at most maxCached decisions and maxCachedBytes of names;
// past either it is dropped, so that clients naming many (or long)
// resources cannot grow it without bound.
//
// It imports metadata (the image's ACLs) and kmsg only, and must never
// import cluster or its other subpackages: the principal and the request
// are the connection layer's.
package acl
