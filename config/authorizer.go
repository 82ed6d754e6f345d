package config

import (
	"strings"
)

// The authorizer classes kbroker implements (cluster/acl): KRaft's
// StandardAuthorizer, and the ZooKeeper-era AclAuthorizer, which decides
// the same way.
const (
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	LegacyAuthorizerClass   = "kafka.security.authorizer.AclAuthorizer"
)

// authorizerClassNameKey is authorizer.class.name: empty (no
// authorization) or one of the classes above; any other class is refused,
// since a broker that silently ignored its authorizer would serve
// everybody.
var authorizerClassNameKey = brokerKey{
	name: "authorizer.class.name", def: "",
	doc:    "The authorizer: empty for none (everything allowed), or " + StandardAuthorizerClass + " (also accepted: " + LegacyAuthorizerClass + ") for ACLs kept in the metadata log.",
	parse:  func(b *builder, v string) error { b.AuthorizerClassName = strings.TrimSpace(v); return nil },
	format: func(c *Config) string { return c.AuthorizerClassName },
	check: func(c *Config) error {
		switch c.AuthorizerClassName {
		case "", StandardAuthorizerClass, LegacyAuthorizerClass:
			return nil
		}
		return invalid("authorizer.class.name", "%q is not an authorizer kbroker implements (%s)", c.AuthorizerClassName, StandardAuthorizerClass)
	},
}

// superUsersKey is super.users: principals separated by ';', each
// Type:name (User:admin;User:broker), allowed every action.
var superUsersKey = brokerKey{
	name: "super.users", def: "",
	doc: "Principals allowed every action whatever the ACLs, separated by ';' (User:admin;User:broker).",
	parse: func(b *builder, v string) error {
		var out []string
		for _, p := range strings.Split(v, ";") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
				return errString(p + " is not a principal of the form Type:name")
			}
			out = append(out, p)
		}
		b.SuperUsers = out
		return nil
	},
	format: func(c *Config) string { return strings.Join(c.SuperUsers, ";") },
}
