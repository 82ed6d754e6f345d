package admincli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// acls list|create|delete: kafka-acls.sh --list/--add/--remove over
// DescribeAcls, CreateAcls and DeleteAcls (kadm's ACLBuilder).

// aclFlags are the flags the three commands share.
type aclFlags struct {
	principals commaList
	ops        commaList
	hosts      commaList
	allow      bool
	deny       bool
	topics     commaList
	groups     commaList
	cluster    bool
	txnIDs     commaList
	pattern    string
}

func (f *aclFlags) add(fs *flag.FlagSet, create bool) {
	fs.Var(&f.principals, "principal", "the principal, as User:NAME (repeatable)")
	fs.Var(&f.ops, "operation", "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable)")
	fs.Var(&f.topics, "topic", "a topic resource (repeatable)")
	fs.Var(&f.groups, "group", "a consumer group resource (repeatable)")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fs.Var(&f.txnIDs, "transactional-id", "a transactional id resource (repeatable)")
	if create {
		fs.StringVar(&f.pattern, "resource-pattern-type", "literal", "literal or prefixed")
	} else {
		fs.StringVar(&f.pattern, "resource-pattern-type", "", "literal, prefixed, match (what applies to the name) or any (default literal with a resource, any without)")
	}
	fs.Var(&f.hosts, "host", "the client host the ACL is for (default * on create, any host otherwise)")
	fs.BoolVar(&f.allow, "allow", false, "an ALLOW ACL (create), only ALLOW ACLs (list, delete)")
	fs.BoolVar(&f.deny, "deny", false, "a DENY ACL (create), only DENY ACLs (list, delete)")
}

func (f *aclFlags) hasResource() bool {
	return len(f.topics)+len(f.groups)+len(f.txnIDs) > 0 || f.cluster
}

// builder turns the flags into an ACLBuilder: for create (exact ACLs)
// or as a filter (list, delete).
func (f *aclFlags) builder(create bool) (*kadm.ACLBuilder, error) {
	if f.allow && f.deny {
		return nil, usagef("--allow and --deny exclude each other")
	}
	if f.pattern == "" {
		// As kafka-acls.sh: a resource is matched literally unless
		// asked otherwise; no resource lists every pattern.
		f.pattern = "literal"
		if !f.hasResource() {
			f.pattern = "any"
		}
	}
	pattern, err := kmsg.ParseACLResourcePatternType(f.pattern)
	if err != nil || pattern == kmsg.ACLResourcePatternTypeUnknown {
		return nil, usagef("--resource-pattern-type: %q is not literal, prefixed, match or any", f.pattern)
	}
	if create && pattern != kmsg.ACLResourcePatternTypeLiteral && pattern != kmsg.ACLResourcePatternTypePrefixed {
		return nil, usagef("--resource-pattern-type: an ACL is created literal or prefixed, not %s", f.pattern)
	}
	var ops []kadm.ACLOperation
	for _, o := range f.ops {
		op, err := kmsg.ParseACLOperation(o)
		if err != nil || op == kmsg.ACLOperationUnknown || (create && op == kmsg.ACLOperationAny) {
			return nil, usagef("--operation: %q is not an ACL operation", o)
		}
		ops = append(ops, op)
	}
	for _, p := range f.principals {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return nil, usagef("--principal: %q is not TYPE:NAME (User:alice)", p)
		}
	}
	b := kadm.NewACLs().ResourcePatternType(pattern)
	if len(f.topics) > 0 {
		b.Topics(f.topics...)
	}
	if len(f.groups) > 0 {
		b.Groups(f.groups...)
	}
	if f.cluster {
		b.Clusters()
	}
	if len(f.txnIDs) > 0 {
		b.TransactionalIDs(f.txnIDs...)
	}
	if create {
		switch {
		case len(f.principals) == 0:
			return nil, usagef("--principal is required")
		case len(ops) == 0:
			return nil, usagef("--operation is required")
		case !f.allow && !f.deny:
			return nil, usagef("--allow or --deny is required")
		case !f.hasResource():
			return nil, usagef("a resource is required: --topic, --group, --cluster or --transactional-id")
		}
		hosts := []string(f.hosts)
		if len(hosts) == 0 {
			hosts = []string{"*"}
		}
		if f.allow {
			b.Allow(f.principals...).AllowHosts(hosts...)
		} else {
			b.Deny(f.principals...).DenyHosts(hosts...)
		}
		return b.Operations(ops...), nil
	}
	if !f.hasResource() {
		b.AnyResource()
	}
	b.Operations(ops...) // none: any operation
	// A filter: an unset principal or host matches any. Only the side
	// asked for (--allow or --deny) is matched when one is given.
	if !f.deny {
		b.Allow(f.principals...).AllowHosts(f.hosts...)
	}
	if !f.allow {
		b.Deny(f.principals...).DenyHosts(f.hosts...)
	}
	return b, nil
}

// aclRow is one ACL as printed and as JSON.
type aclRow struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Permission   string `json:"permission"`
	Operation    string `json:"operation"`
	ResourceType string `json:"resource_type"`
	Resource     string `json:"resource"`
	PatternType  string `json:"pattern_type"`
	Error        string `json:"error,omitempty"`
}

var aclHeader = []string{"PRINCIPAL", "HOST", "PERMISSION", "OPERATION", "RESOURCE-TYPE", "RESOURCE", "PATTERN"}

func newACLRow(principal, host string, t kmsg.ACLResourceType, name string, pat kadm.ACLPattern, op kadm.ACLOperation, perm kmsg.ACLPermissionType) aclRow {
	return aclRow{
		Principal: principal, Host: host, Permission: strings.ToUpper(perm.String()),
		Operation: strings.ToUpper(op.String()), ResourceType: strings.ToUpper(t.String()),
		Resource: name, PatternType: strings.ToUpper(pat.String()),
	}
}

func (a *adminEnv) emitACLs(rows []aclRow, withError bool) error {
	slices.SortFunc(rows, func(x, y aclRow) int {
		return cmp.Or(cmp.Compare(x.ResourceType, y.ResourceType), cmp.Compare(x.Resource, y.Resource),
			cmp.Compare(x.PatternType, y.PatternType), cmp.Compare(x.Principal, y.Principal),
			cmp.Compare(x.Permission, y.Permission), cmp.Compare(x.Operation, y.Operation), cmp.Compare(x.Host, y.Host))
	})
	header := aclHeader
	if withError {
		header = append(slices.Clone(aclHeader), "RESULT")
	}
	table := make([][]string, 0, len(rows))
	for _, r := range rows {
		row := []string{r.Principal, r.Host, r.Permission, r.Operation, r.ResourceType, r.Resource, r.PatternType}
		if withError {
			res := "OK"
			if r.Error != "" {
				res = r.Error
			}
			row = append(row, res)
		}
		table = append(table, row)
	}
	return a.emit(rows, header, table)
}

// aclCommand is the shape the three ACL commands share: build the
// filter or creation from the flags, call the broker, print the rows and
// fail naming what went wrong. call turns kadm's results into rows and
// per-entry errors.
func aclCommand(create, needResource, withError bool, what string,
	call func(ctx context.Context, a *adminEnv, b *kadm.ACLBuilder) ([]aclRow, []error, error)) adminCommand {
	var f aclFlags
	return adminCommand{
		flags: func(fs *flag.FlagSet) { f.add(fs, create) },
		run: func(ctx context.Context, a *adminEnv) error {
			// As kafka-acls.sh --remove: a resource is required, so a
			// bare delete cannot wipe every ACL of the cluster.
			if needResource && !f.hasResource() {
				return usagef("a resource is required: --topic, --group, --cluster or --transactional-id")
			}
			b, err := f.builder(create)
			if err != nil {
				return err
			}
			rows, errs, err := call(ctx, a, b)
			if err != nil {
				return err
			}
			if err := a.emitACLs(rows, withError); err != nil {
				return err
			}
			return firstErr(what, errs)
		},
	}
}

func aclsList() adminCommand {
	return aclCommand(false, false, false, "ACL filters", func(ctx context.Context, a *adminEnv, b *kadm.ACLBuilder) ([]aclRow, []error, error) {
		results, err := a.adm.DescribeACLs(ctx, b)
		rows := []aclRow{}
		var errs []error
		for _, r := range results {
			if r.Err != nil {
				errs = append(errs, errors.New(errText(r.Err, r.ErrMessage)))
				continue
			}
			for _, d := range r.Described {
				rows = append(rows, newACLRow(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission))
			}
		}
		return rows, errs, err
	})
}

func aclsCreate() adminCommand {
	return aclCommand(true, false, true, "ACL creations", func(ctx context.Context, a *adminEnv, b *kadm.ACLBuilder) ([]aclRow, []error, error) {
		results, err := a.adm.CreateACLs(ctx, b)
		rows := []aclRow{}
		var errs []error
		for _, r := range results {
			row := newACLRow(r.Principal, r.Host, r.Type, r.Name, r.Pattern, r.Operation, r.Permission)
			row.Error = errText(r.Err, r.ErrMessage)
			if r.Err != nil {
				errs = append(errs, r.Err)
			}
			rows = append(rows, row)
		}
		return rows, errs, err
	})
}

func aclsDelete() adminCommand {
	return aclCommand(false, true, true, "ACL deletions", func(ctx context.Context, a *adminEnv, b *kadm.ACLBuilder) ([]aclRow, []error, error) {
		results, err := a.adm.DeleteACLs(ctx, b)
		rows := []aclRow{}
		var errs []error
		for _, r := range results {
			if r.Err != nil {
				errs = append(errs, errors.New(errText(r.Err, r.ErrMessage)))
				continue
			}
			for _, d := range r.Deleted {
				row := newACLRow(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission)
				row.Error = errText(d.Err, d.ErrMessage)
				if d.Err != nil {
					errs = append(errs, d.Err)
				}
				rows = append(rows, row)
			}
		}
		return rows, errs, err
	})
}
