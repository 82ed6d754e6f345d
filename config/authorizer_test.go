package config

import (
	"errors"
	"reflect"
	"testing"
)

func TestAuthorizerKeys(t *testing.T) {
	d := Default()
	if d.AuthorizerClassName != "" || d.AllowEveryoneIfNoACLFound || d.SuperUsers != nil {
		t.Fatalf("defaults: %q %v %v", d.AuthorizerClassName, d.AllowEveryoneIfNoACLFound, d.SuperUsers)
	}
	for _, tc := range []struct {
		sets    []string
		wantErr bool
	}{
		{[]string{"authorizer.class.name=" + StandardAuthorizerClass}, false},
		{[]string{"authorizer.class.name=" + LegacyAuthorizerClass}, false},
		{[]string{"authorizer.class.name=com.example.MyAuthorizer"}, true},
		{[]string{"super.users=admin"}, true},
		{[]string{"super.users=User:admin; User:broker;", "allow.everyone.if.no.acl.found=true"}, false},
	} {
		c, err := Load("", nil, tc.sets)
		if err == nil {
			err = c.Validate()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("%v: %v, want error %v", tc.sets, err, tc.wantErr)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%v: %v is not ErrInvalid", tc.sets, err)
		}
	}
	c, err := Load("", nil, []string{"super.users=User:admin; User:broker;", "allow.everyone.if.no.acl.found=true"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.SuperUsers, []string{"User:admin", "User:broker"}) || !c.AllowEveryoneIfNoACLFound {
		t.Fatalf("%v %v", c.SuperUsers, c.AllowEveryoneIfNoACLFound)
	}
}
