package allocation

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
)

// Fallbacks counts, over one allocation pass, the new routes a score or an extender decided and
// those one of them could not (the next in line decided instead), with the first reason:
// CustomStrategyApplied. A route is counted once, however many strategies it went through. A pass
// plans on one goroutine.
type Fallbacks struct {
	Picks, Fell  int
	FirstProblem string
	seen, fell   map[string]bool
}

// Decided counts r as picked (by a score or an extender, or by what they fall back to).
func (f *Fallbacks) Decided(r Route) {
	if f.seen == nil {
		f.seen, f.fell = map[string]bool{}, map[string]bool{}
	}
	k := r.Kind + "/" + r.Namespace + "/" + r.Name
	if !f.seen[k] {
		f.seen[k] = true
		f.Picks++
	}
}

// FellBack counts r as one a score or an extender could not decide, because of problem.
func (f *Fallbacks) FellBack(r Route, problem string) {
	f.Decided(r)
	k := r.Kind + "/" + r.Namespace + "/" + r.Name
	if !f.fell[k] {
		f.fell[k] = true
		f.Fell++
	}
	if f.FirstProblem == "" {
		f.FirstProblem = problem
	}
}

// maxScoreCost bounds one evaluation of a score, in CEL's cost units (a few hundred operations:
// a score is a small arithmetic over labels and figures, run once per candidate of a new route).
const maxScoreCost = 10000

var scoreEnv = sync.OnceValues(func() (*cel.Env, error) {
	// Optional types: labels a shard or route may lack read as shard.labels.?tier.orValue("").
	// No comprehension macros (all, exists, map, filter): over labels they would iterate a map in
	// Go's random order, and a score must pick the same shard for the same inputs. has() stays.
	return cel.NewEnv(cel.ClearMacros(), cel.Macros(cel.HasMacro), cel.OptionalTypes(),
		cel.Variable("shard", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("route", cel.MapType(cel.StringType, cel.DynType)))
})

// Score is a compiled allocation score (AllocationSettings.Score).
type Score struct{ prg cel.Program }

// CompileScore compiles a score: a CEL expression of shard and route (ScoreVariables) whose value
// is a number. Its cost is bounded when it runs (CostLimit); the admission webhook also refuses
// new scores whose estimated worst-case cost is past that bound (CheckScoreCost).
func CompileScore(expr string) (*Score, error) {
	env, err := scoreEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("score: %w", iss.Err())
	}
	if t := ast.OutputType(); !t.IsExactType(cel.IntType) && !t.IsExactType(cel.DoubleType) && !t.IsExactType(cel.DynType) &&
		!t.IsExactType(cel.UintType) {
		return nil, fmt.Errorf("score: its value is %s, not a number", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(maxScoreCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	return &Score{prg: prg}, nil
}

// ScoreVariables are what a score sees of a candidate and of the route: never a Secret, never
// another cluster's. utilization is -1 while the shard's load is unknown.
func ScoreVariables(r Route, s ShardLoad) map[string]any {
	util := int64(-1)
	if s.LoadKnown {
		util = int64(s.Utilization)
	}
	return map[string]any{
		"shard": map[string]any{"name": s.Name, "labels": orEmpty(s.Labels), "routes": int64(s.Routes),
			"readyRouters": int64(s.Capacity), "utilization": util, "loadKnown": s.LoadKnown,
			"requestsPerSecond": s.RequestsPerSecond, "capacity": int64(s.CapacityRPS)},
		"route": map[string]any{"kind": r.Kind, "namespace": r.Namespace, "name": r.Name, "labels": orEmpty(r.Labels),
			"namespaceLabels": orEmpty(r.NamespaceLabels), "hosts": slices.DeleteFunc(slices.Clone(r.Hosts),
				func(h string) bool { return h == "" })},
	}
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// Eval scores one candidate for r.
func (s *Score) Eval(r Route, c ShardLoad) (float64, error) {
	out, _, err := s.prg.Eval(ScoreVariables(r, c))
	if err != nil {
		return 0, err
	}
	var v float64
	switch x := out.Value().(type) {
	case int64:
		v = float64(x)
	case uint64:
		v = float64(x)
	case float64:
		v = x
	default:
		return 0, fmt.Errorf("its value is %T, not a number", x)
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("its value is NaN")
	}
	return v, nil
}

// Scored picks by a score: the lowest wins, ties go to the fewest routes per ready router, then to
// the first by name. Where the score fails for a candidate, fallback picks (and Fallbacks says why).
func Scored(score *Score, fallback Strategy, f *Fallbacks) Strategy {
	return scored{score: score, fallback: fallback, fallbacks: f}
}

type scored struct {
	score     *Score
	fallback  Strategy
	fallbacks *Fallbacks
}

func (s scored) Pick(r Route, c []ShardLoad) string {
	values := make([]float64, len(c))
	for i := range c {
		v, err := s.score.Eval(r, c[i])
		if err != nil {
			s.fallbacks.FellBack(r, fmt.Sprintf("score failed for %s %s/%s on shard %s: %v", r.Kind, r.Namespace, r.Name,
				c[i].Name, err))
			return s.fallback.Pick(r, c)
		}
		values[i] = v
	}
	s.fallbacks.Decided(r)
	best := 0
	for i := 1; i < len(c); i++ {
		if values[i] < values[best] || (values[i] == values[best] && perRouter(c[i], c[best]) < 0) {
			best = i
		}
	}
	return c[best].Name
}

// Ask asks an extender for a route's shard among the candidates.
type Ask func(r Route, candidates []ShardLoad) (string, error)

// Extended picks what an extender answers when it names a candidate; otherwise fallback picks (and
// Fallbacks says why).
func Extended(ask Ask, fallback Strategy, f *Fallbacks) Strategy {
	return extended{ask: ask, fallback: fallback, fallbacks: f}
}

type extended struct {
	ask       Ask
	fallback  Strategy
	fallbacks *Fallbacks
}

func (e extended) Pick(r Route, c []ShardLoad) string {
	name, err := e.ask(r, c)
	if err == nil && !slices.ContainsFunc(c, func(s ShardLoad) bool { return s.Name == name }) {
		err = fmt.Errorf("it answered shard %q, which is not a candidate (%s)", name, strings.Join(candidateNames(c), ", "))
	}
	if err != nil {
		e.fallbacks.FellBack(r, fmt.Sprintf("extender for %s %s/%s: %v", r.Kind, r.Namespace, r.Name, err))
		return e.fallback.Pick(r, c)
	}
	e.fallbacks.Decided(r)
	return name
}

func candidateNames(c []ShardLoad) []string {
	out := make([]string, len(c))
	for i, s := range c {
		out[i] = s.Name
	}
	return out
}
