package admincli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/cliflag"
)

// features describe|upgrade|downgrade|disable, as kafka-features.sh:
// ApiVersions for the supported and finalized levels, UpdateFeatures
// for the changes.

func featuresDescribe() adminCommand {
	return adminCommand{
		flags: func(*flag.FlagSet) {},
		run: func(ctx context.Context, a *adminEnv) error {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 4
			req.ClientSoftwareName, req.ClientSoftwareVersion = "kbroker-admin", "1"
			resp, err := req.RequestWith(ctx, a.cl)
			if err != nil {
				return err
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return err
			}
			type feature struct {
				Name           string `json:"name"`
				SupportedMin   int16  `json:"supportedMinVersion"`
				SupportedMax   int16  `json:"supportedMaxVersion"`
				FinalizedLevel int16  `json:"finalizedVersionLevel"`
				Epoch          int64  `json:"epoch"`
			}
			finalized := map[string]int16{}
			for _, f := range resp.FinalizedFeatures {
				finalized[f.Name] = f.MaxVersionLevel
			}
			out := []feature{}
			for _, f := range resp.SupportedFeatures {
				out = append(out, feature{f.Name, f.MinVersion, f.MaxVersion, finalized[f.Name], resp.FinalizedFeaturesEpoch})
			}
			slices.SortFunc(out, func(x, y feature) int { return strings.Compare(x.Name, y.Name) })
			var rows [][]string
			for _, f := range out {
				rows = append(rows, []string{f.Name, strconv.Itoa(int(f.SupportedMin)), strconv.Itoa(int(f.SupportedMax)),
					strconv.Itoa(int(f.FinalizedLevel)), strconv.FormatInt(f.Epoch, 10)})
			}
			return a.emit(out, []string{"FEATURE", "SUPPORTED-MIN", "SUPPORTED-MAX", "FINALIZED", "EPOCH"}, rows)
		},
	}
}

// Kafka's UpgradeType values.
const (
	upgradeOnly     int8 = 1
	safeDowngrade   int8 = 2
	unsafeDowngrade int8 = 3
)

func featuresUpgrade() adminCommand   { return featuresChange("upgrade") }
func featuresDowngrade() adminCommand { return featuresChange("downgrade") }
func featuresDisable() adminCommand   { return featuresChange("disable") }

// featuresChange is upgrade (--feature NAME=LEVEL), downgrade (the same,
// --unsafe for a lossy one) or disable (--feature NAME: level 0), each
// with --dry-run (ValidateOnly).
func featuresChange(verb string) adminCommand {
	var (
		specs  cliflag.StringList
		dryRun bool
		unsafe bool
	)
	return adminCommand{
		flags: func(fs *flag.FlagSet) {
			if verb == "disable" {
				fs.Var(&specs, "feature", "the feature to disable, e.g. group.version (repeatable)")
			} else {
				fs.Var(&specs, "feature", "NAME=LEVEL, e.g. metadata.version=2 (repeatable)")
			}
			fs.BoolVar(&dryRun, "dry-run", false, "validate the change without making it")
			if verb != "upgrade" {
				fs.BoolVar(&unsafe, "unsafe", false, "allow a downgrade that may lose metadata")
			}
		},
		run: func(ctx context.Context, a *adminEnv) error {
			if len(specs) == 0 {
				return usagef("--feature is required")
			}
			req := kmsg.NewPtrUpdateFeaturesRequest()
			req.ValidateOnly = dryRun
			for _, s := range specs {
				u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
				u.Feature = s
				if verb != "disable" {
					name, level, ok := strings.Cut(s, "=")
					n, err := strconv.ParseInt(level, 10, 16)
					if !ok || name == "" || err != nil || n < 0 {
						return usagef("--feature %q: want NAME=LEVEL", s)
					}
					u.Feature, u.MaxVersionLevel = name, int16(n)
				}
				switch {
				case verb == "upgrade":
					u.UpgradeType = upgradeOnly
				case unsafe:
					u.UpgradeType = unsafeDowngrade
				default:
					u.UpgradeType = safeDowngrade
				}
				u.AllowDowngrade = u.UpgradeType != upgradeOnly // v0
				req.FeatureUpdates = append(req.FeatureUpdates, u)
			}
			resp, err := req.RequestWith(ctx, a.cl)
			if err != nil {
				return err
			}
			type result struct {
				Feature string `json:"feature"`
				Level   int16  `json:"level"`
				Error   string `json:"error,omitempty"`
			}
			out := []result{}
			failed := 0
			for i, u := range req.FeatureUpdates {
				code, msg := resp.ErrorCode, deref(resp.ErrorMessage)
				if i < len(resp.Results) && (resp.Version < 2 || code == 0) {
					code, msg = resp.Results[i].ErrorCode, deref(resp.Results[i].ErrorMessage)
				}
				r := result{Feature: u.Feature, Level: u.MaxVersionLevel}
				if err := kerr.ErrorForCode(code); err != nil {
					r.Error = errText(err, msg)
					failed++
				}
				out = append(out, r)
			}
			if a.json {
				if err := a.emit(out, nil, nil); err != nil {
					return err
				}
			} else {
				for _, r := range out {
					fmt.Fprintln(a.out, featureOutcome(verb, dryRun, r.Feature, r.Level, r.Error))
				}
			}
			if failed > 0 {
				return errors.New(plural(failed, "feature update") + " failed")
			}
			return nil
		},
	}
}

// featureOutcome is kafka-features.sh's line for one update.
func featureOutcome(verb string, dryRun bool, name string, level int16, errText string) string {
	if verb == "disable" {
		switch {
		case errText != "":
			return fmt.Sprintf("Could not disable %s. %s", name, errText)
		case dryRun:
			return name + " can be disabled."
		}
		return name + " was disabled."
	}
	past := map[string]string{"upgrade": "upgraded", "downgrade": "downgraded"}[verb]
	switch {
	case errText != "":
		return fmt.Sprintf("Could not %s %s to %d. %s", verb, name, level, errText)
	case dryRun:
		return fmt.Sprintf("%s can be %s to %d.", name, past, level)
	}
	return fmt.Sprintf("%s was %s to %d.", name, past, level)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
