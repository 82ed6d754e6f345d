package admincli

import (
	"context"
	"flag"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kbroker/kbroker/internal/cliflag"
)

// The configs commands: kafka-configs.sh --describe and --alter for
// topics and brokers. A broker without --entity-name is the cluster-wide
// default (Kafka's --entity-default).

// configEntity reads --entity-type and --entity-name.
type configEntity struct {
	typ, name string
}

func (e *configEntity) flags(fs *flag.FlagSet) {
	fs.StringVar(&e.typ, "entity-type", "", "topics or brokers")
	fs.StringVar(&e.name, "entity-name", "", "the topic, or the broker id (brokers: absent for the cluster-wide default)")
}

// broker returns the broker ids named (none: the cluster default).
func (e *configEntity) brokers() ([]int32, error) {
	if e.name == "" {
		return nil, nil
	}
	id, err := strconv.ParseInt(e.name, 10, 32)
	if err != nil {
		return nil, usagef("--entity-name %q is not a broker id", e.name)
	}
	return []int32{int32(id)}, nil
}

func (e *configEntity) check() error {
	switch e.typ {
	case "topics":
		if e.name == "" {
			return usagef("--entity-name is required for topics")
		}
	case "brokers":
	default:
		return usagef("--entity-type must be topics or brokers")
	}
	return nil
}

func configsDescribe() adminCommand {
	var e configEntity
	return adminCommand{
		flags: e.flags,
		run: func(ctx context.Context, a *adminEnv) error {
			if err := e.check(); err != nil {
				return err
			}
			var res kadm.ResourceConfigs
			var err error
			if e.typ == "topics" {
				res, err = a.adm.DescribeTopicConfigs(ctx, e.name)
			} else {
				var ids []int32
				if ids, err = e.brokers(); err != nil {
					return err
				}
				res, err = a.adm.DescribeBrokerConfigs(ctx, ids...)
			}
			if err != nil {
				return err
			}
			type config struct {
				Name      string  `json:"name"`
				Value     *string `json:"value"`
				Source    string  `json:"source"`
				Sensitive bool    `json:"sensitive"`
			}
			type resource struct {
				Name    string   `json:"name"`
				Configs []config `json:"configs"`
				Error   string   `json:"error,omitempty"`
			}
			var out []resource
			var rows [][]string
			var errs []error
			for _, r := range res {
				rr := resource{Name: r.Name, Error: errText(r.Err, r.ErrMessage)}
				errs = append(errs, r.Err)
				if r.Err != nil {
					rows = append(rows, []string{r.Name, "", "", rr.Error})
				}
				for _, c := range r.Configs {
					rr.Configs = append(rr.Configs, config{c.Key, c.Value, c.Source.String(), c.Sensitive})
					v := "null"
					switch {
					case c.Sensitive:
						v = "(sensitive)"
					case c.Value != nil:
						v = *c.Value
					}
					rows = append(rows, []string{r.Name, c.Key, v, c.Source.String()})
				}
				out = append(out, rr)
			}
			if err := a.emit(out, []string{"RESOURCE", "NAME", "VALUE", "SOURCE"}, rows); err != nil {
				return err
			}
			return firstErr("resources", errs)
		},
	}
}

func configsAlter() adminCommand {
	var e configEntity
	var add, del string
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			e.flags(fs)
			fs.StringVar(&add, "add-config", "", "configs to set: k1=v1,k2=v2")
			fs.StringVar(&del, "delete-config", "", "configs to remove: k1,k2")
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if err := e.check(); err != nil {
				return err
			}
			var alters []kadm.AlterConfig
			for _, kv := range cliflag.Split(add) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--add-config %q is not key=value", kv)
				}
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
			}
			for _, k := range cliflag.Split(del) {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			if len(alters) == 0 {
				return usagef("--add-config or --delete-config is required")
			}
			var res kadm.AlterConfigsResponses
			var err error
			if e.typ == "topics" {
				res, err = a.adm.AlterTopicConfigs(ctx, alters, e.name)
			} else {
				var ids []int32
				if ids, err = e.brokers(); err != nil {
					return err
				}
				res, err = a.adm.AlterBrokerConfigs(ctx, alters, ids...)
			}
			if err != nil {
				return err
			}
			type result struct {
				Name  string `json:"name"`
				Error string `json:"error,omitempty"`
			}
			var out []result
			var rows [][]string
			var errs []error
			for _, r := range res {
				name := r.Name
				if name == "" {
					name = "(cluster default)"
				}
				out = append(out, result{r.Name, errText(r.Err, r.ErrMessage)})
				rows = append(rows, []string{name, orOK(errText(r.Err, r.ErrMessage))})
				errs = append(errs, r.Err)
			}
			if err := a.emit(out, []string{"RESOURCE", "RESULT"}, rows); err != nil {
				return err
			}
			return firstErr("alterations", errs)
		},
	}
}
