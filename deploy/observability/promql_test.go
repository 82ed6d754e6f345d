package observability

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The metric names a PromQL expression selects, found by a small scanner
// rather than Prometheus's own parser: the prometheus module would pull
// newer versions of the broker's own dependencies (hashicorp's, x/net,
// x/crypto) into go.mod. The scanner knows PromQL's lexical structure
// (strings, label matchers, ranges, grouping clauses, functions and
// keywords), so whatever identifier is left is a metric name. When
// promtool is on PATH, TestPromtool also has Prometheus parse every
// expression.

// promqlFunctions are PromQL's functions and aggregation operators
// (Prometheus 2.x and 3.x); an identifier followed by "(" must be one.
var promqlFunctions = setOf(
	// Aggregations.
	"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
	"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio",
	// Functions.
	"abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh",
	"atan", "atanh", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
	"clamp_min", "cos", "cosh", "count_over_time", "days_in_month",
	"day_of_month", "day_of_week", "day_of_year", "deg", "delta", "deriv",
	"double_exponential_smoothing", "exp", "floor", "histogram_avg",
	"histogram_count", "histogram_fraction", "histogram_quantile",
	"histogram_stddev", "histogram_stdvar", "histogram_sum", "holt_winters",
	"hour", "idelta", "increase", "info", "irate", "label_join",
	"label_replace", "last_over_time", "ln", "log10", "log2",
	"mad_over_time", "max_over_time", "min_over_time", "minute", "month",
	"pi", "predict_linear", "present_over_time", "quantile_over_time", "rad",
	"rate", "resets", "round", "scalar", "sgn", "sin", "sinh", "sort",
	"sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt",
	"stddev_over_time", "stdvar_over_time", "sum_over_time", "tan", "tanh",
	"time", "timestamp", "vector", "year",
)

// promqlAggregations may take their grouping clause before the
// parenthesised argument: sum by (job) (x).
var promqlAggregations = setOf("sum", "min", "max", "avg", "group", "stddev",
	"stdvar", "count", "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio")

// promqlGrouping are the keywords followed by a parenthesised label list.
var promqlGrouping = setOf("by", "without", "on", "ignoring", "group_left", "group_right")

// promqlKeywords are the other words that are not metric names.
var promqlKeywords = setOf("and", "or", "unless", "atan2", "bool", "offset",
	"inf", "nan", "start", "end")

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

var matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*$`)

// metricNames returns the metric names expr selects, sorted and
// deduplicated, or why expr is not PromQL as far as the scanner can tell.
func metricNames(expr string) ([]string, error) {
	s := &scanner{src: expr}
	names := map[string]bool{}
	depth := 0
	for {
		s.skipSpace()
		if s.eof() {
			break
		}
		c := s.peek()
		switch {
		case c == '"' || c == '\'' || c == '`':
			if _, err := s.str(); err != nil {
				return nil, err
			}
		case c == '{':
			// A selector's matchers. After a metric name they narrow it; on
			// their own they need a __name__ matcher.
			name, err := s.matchers()
			if err != nil {
				return nil, err
			}
			if name != "" {
				names[name] = true
			} else if !s.afterName {
				return nil, fmt.Errorf("selector without a metric name at %d in %q", s.pos, expr)
			}
		case c == '[':
			end := strings.IndexByte(s.src[s.pos:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ at %d in %q", s.pos, expr)
			}
			s.pos += end + 1
		case c == '(':
			depth++
			s.pos++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ) at %d in %q", s.pos, expr)
			}
			s.pos++
		case c == '}' || c == ']':
			return nil, fmt.Errorf("unbalanced %c at %d in %q", c, s.pos, expr)
		case isDigit(c) || (c == '.' && s.pos+1 < len(s.src) && isDigit(s.src[s.pos+1])):
			// Numbers and durations (0.99, 1e3, 5m, 1h30m, 0x1f).
			for !s.eof() && (isIdent(s.peek()) || s.peek() == '.') {
				s.pos++
			}
		case isIdentStart(c):
			word := s.ident()
			s.skipSpace()
			next := byte(0)
			if !s.eof() {
				next = s.peek()
			}
			switch {
			case promqlGrouping[word]:
				if next == '(' {
					if err := s.skipLabelList(); err != nil {
						return nil, err
					}
				} else if word != "group_left" && word != "group_right" {
					return nil, fmt.Errorf("%s without a label list in %q", word, expr)
				}
			case promqlAggregations[word] && (next == '(' || s.lookingAtWord("by") || s.lookingAtWord("without")):
			case next == '(':
				if !promqlFunctions[word] {
					return nil, fmt.Errorf("unknown function %s in %q", word, expr)
				}
			case promqlKeywords[word]:
			default:
				names[word] = true
				s.afterName = true
				continue
			}
		default:
			// Operators: + - * / % ^ == != <= >= < > and @.
			s.pos++
		}
		s.afterName = false
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced ( in %q", expr)
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

type scanner struct {
	src       string
	pos       int
	afterName bool // the last token was a metric name: a { narrows it
}

func (s *scanner) eof() bool  { return s.pos >= len(s.src) }
func (s *scanner) peek() byte { return s.src[s.pos] }

func (s *scanner) skipSpace() {
	for !s.eof() {
		switch c := s.peek(); {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.pos++
		case c == '#': // a comment runs to the end of the line
			for !s.eof() && s.peek() != '\n' {
				s.pos++
			}
		default:
			return
		}
	}
}

func (s *scanner) ident() string {
	start := s.pos
	for !s.eof() && isIdent(s.peek()) {
		s.pos++
	}
	return s.src[start:s.pos]
}

// lookingAtWord reports whether the next token is the word w.
func (s *scanner) lookingAtWord(w string) bool {
	rest := s.src[s.pos:]
	return strings.HasPrefix(rest, w) && (len(rest) == len(w) || !isIdent(rest[len(w)]))
}

// str consumes a string literal and returns its raw content.
func (s *scanner) str() (string, error) {
	quote := s.peek()
	start := s.pos
	s.pos++
	for !s.eof() {
		c := s.peek()
		switch {
		case c == '\\' && quote != '`':
			s.pos += 2
		case c == quote:
			s.pos++
			return s.src[start+1 : s.pos-1], nil
		default:
			s.pos++
		}
	}
	return "", fmt.Errorf("unterminated string at %d in %q", start, s.src)
}

// matchers consumes {name op "value", ...} and returns the value of a
// __name__= matcher, if any.
func (s *scanner) matchers() (string, error) {
	open := s.pos
	s.pos++
	name := ""
	for {
		// label op
		start := s.pos
		for !s.eof() && s.peek() != '"' && s.peek() != '\'' && s.peek() != '`' && s.peek() != '}' {
			s.pos++
		}
		if s.eof() {
			return "", fmt.Errorf("unclosed { at %d in %q", open, s.src)
		}
		head := s.src[start:s.pos]
		if s.peek() == '}' {
			if strings.TrimSpace(strings.Trim(strings.TrimSpace(head), ",")) != "" {
				return "", fmt.Errorf("bad label matcher %q in %q", head, s.src)
			}
			s.pos++
			return name, nil
		}
		m := matcherRE.FindStringSubmatch(strings.TrimLeft(head, ", \t\n"))
		if m == nil {
			return "", fmt.Errorf("bad label matcher %q in %q", head, s.src)
		}
		val, err := s.str()
		if err != nil {
			return "", err
		}
		if m[1] == "__name__" {
			if m[2] != "=" {
				return "", fmt.Errorf("__name__%s%q selects names by pattern; the check needs them spelt out in %q", m[2], val, s.src)
			}
			name = val
		}
		s.skipSpace()
		if !s.eof() && s.peek() == ',' {
			s.pos++
		}
	}
}

// skipLabelList consumes "(label, label)".
func (s *scanner) skipLabelList() error {
	end := strings.IndexByte(s.src[s.pos:], ')')
	if end < 0 {
		return fmt.Errorf("unclosed label list at %d in %q", s.pos, s.src)
	}
	for _, l := range strings.Split(s.src[s.pos+1:s.pos+end], ",") {
		if l = strings.TrimSpace(l); l != "" && !regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`).MatchString(l) {
			return fmt.Errorf("bad label %q in a grouping clause of %q", l, s.src)
		}
	}
	s.pos += end + 1
	return nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdent(c byte) bool      { return isIdentStart(c) || isDigit(c) }

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up{job="kbroker"} == 0`, []string{"up"}},
		{`sum by (job, instance) (rate(kbroker_isr_shrinks_total{job="kbroker"}[5m])) > 0
		  and sum by (job) (rate(kbroker_isr_expands_total[5m])) > 0`,
			[]string{"kbroker_isr_expands_total", "kbroker_isr_shrinks_total"}},
		{`histogram_quantile(0.99, sum by (le, api) (rate(kbroker_request_handler_seconds_bucket{api=~"Produce|Fetch", x!="}"}[$__rate_interval])))`,
			[]string{"kbroker_request_handler_seconds_bucket"}},
		{`topk(10, max by (topic, partition) (a) - on (topic, partition) group_right b{c="d"})`, []string{"a", "b"}},
		{`a / on(x) group_left(y) b offset 5m`, []string{"a", "b"}},
		{`sum without (instance) (x) or vector(0)`, []string{"x"}},
		{`{__name__="kbroker_raft_term", job="k"} * 1e3 + 0.5`, []string{"kbroker_raft_term"}},
		{`count(kbroker_partition_isr_size < 2) # comment naming not_a_metric`, []string{"kbroker_partition_isr_size"}},
		{`max(x) by (job) > bool 1`, []string{"x"}},
		{`sum (x)`, []string{"x"}},
	} {
		got, err := metricNames(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{
		`rate(x[5m]`,
		`x{job="a"`,
		`{job="a"}`,
		`{__name__=~"kbroker_.*"}`,
		`ratte(x[5m])`,
		`x{job="a}`,
		`x{job}`,
		`sum by x (y)`,
	} {
		if got, err := metricNames(bad); err == nil {
			t.Errorf("%s: no error (names %v)", bad, got)
		}
	}
}
