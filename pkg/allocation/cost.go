package allocation

import (
	"fmt"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
)

// The sizes a score's inputs can reach, for the static cost estimate (as the API server bounds a
// CRD validation rule's inputs by the schema's maxLength and maxItems). Strings by what
// Kubernetes validates; collections by the largest object an API server stores (1.5 MiB) over the
// fewest bytes an entry takes in it: a label `"a":"",` is 6 bytes, a host `{"host":"a"},` 13.
const (
	maxLabelValue = 63
	maxLabelKey   = 317 // a 253-byte DNS prefix, "/" and a 63-byte name
	maxName       = 253 // object names, namespaces, kinds and host names
	maxShardName  = 63  // a DNS label (profile shards)
	objectBytes   = 3 << 19
	maxLabels     = objectBytes / 6
	maxHosts      = objectBytes / 13
)

// CheckScoreCost refuses a score whose worst-case cost, estimated statically over the largest
// inputs it may be given, is past maxScoreCost: what would only fail (and fall back) for some
// routes at run time is refused when the profile is written. Only at admission, and only for a
// score that is new there: a score written before this check keeps working as it did (its cost is
// still bounded at run time), so an upgrade neither freezes its profile nor changes its
// allocations (CRD validation ratcheting, as Kubernetes does it).
func CheckScoreCost(expr string) error {
	env, err := scoreEnv()
	if err != nil {
		return err
	}
	a, iss := env.Compile(expr)
	if iss.Err() != nil {
		return fmt.Errorf("score: %w", iss.Err())
	}
	est, err := env.EstimateCost(a, scoreSizes{})
	if err != nil {
		return fmt.Errorf("score: its cost cannot be estimated: %w", err)
	}
	if est.Max > maxScoreCost {
		return fmt.Errorf("score: its estimated worst-case cost (%s) is past the limit of %d: it may read inputs of "+
			"unbounded size (e.g. `in route.hosts` over a route with thousands of hosts)", costString(est.Max), maxScoreCost)
	}
	return nil
}

func costString(c uint64) string {
	if c > 1e12 {
		return "unbounded"
	}
	return fmt.Sprint(c)
}

// scoreSizes tells CEL's estimator how large each of ScoreVariables may be.
type scoreSizes struct{}

// EstimateCallCost: `k in shard.labels` is a map lookup (CEL, seeing a dyn, also prices it as a
// search of a list); every other call as CEL prices it.
func (scoreSizes) EstimateCallCost(_, overloadID string, _ *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	if overloadID != overloads.InList || len(args) != 2 {
		return nil
	}
	p := args[1].Path()
	if p == nil {
		p = syntacticPath(args[1].Expr())
	}
	if len(p) == 2 && (p[1] == "labels" || p[1] == "namespaceLabels") {
		return &checker.CallEstimate{CostEstimate: checker.FixedCostEstimate(1)}
	}
	return nil
}

func (scoreSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if path == nil {
		// CEL tracks no path through an optional field (shard.labels.?tier) nor orValue: follow
		// them syntactically.
		path = syntacticPath(n.Expr())
	}
	size, ok := sizeOf(path)
	if !ok {
		return nil
	}
	// x.orValue(d) is as large as x or d.
	if e := n.Expr(); e.Kind() == ast.CallKind && e.AsCall().FunctionName() == "orValue" && len(e.AsCall().Args()) == 1 {
		d := e.AsCall().Args()[0]
		if d.Kind() != ast.LiteralKind {
			return nil
		}
		if s, isString := d.AsLiteral().(types.String); isString {
			size = max(size, uint64(len(s)))
		}
	}
	return &checker.SizeEstimate{Min: 0, Max: size}
}

// syntacticPath is the path of shard and route fields e reads: ["shard", "labels", "*"] for
// shard.labels.?tier.orValue(""); nil when e is not such a read.
func syntacticPath(e ast.Expr) []string {
	switch e.Kind() {
	case ast.IdentKind:
		return []string{e.AsIdent()}
	case ast.SelectKind:
		if p := syntacticPath(e.AsSelect().Operand()); p != nil {
			return append(p, e.AsSelect().FieldName())
		}
	case ast.CallKind:
		c := e.AsCall()
		switch {
		case (c.FunctionName() == operators.OptSelect || c.FunctionName() == operators.Index ||
			c.FunctionName() == operators.OptIndex) && len(c.Args()) == 2:
			if p := syntacticPath(c.Args()[0]); p != nil {
				return append(p, "*")
			}
		case (c.FunctionName() == "orValue" || c.FunctionName() == "value") && c.IsMemberFunction():
			return syntacticPath(c.Target())
		}
	}
	return nil
}

// sizeOf is the largest size of what path reads (see ScoreVariables); false for numbers, booleans
// and paths it does not know.
func sizeOf(path []string) (uint64, bool) {
	if len(path) < 2 || (path[0] != "shard" && path[0] != "route") {
		return 0, false
	}
	switch field, rest := path[1], path[2:]; field {
	case "name":
		if path[0] == "shard" {
			return maxShardName, len(rest) == 0
		}
		return maxName, len(rest) == 0
	case "kind", "namespace":
		return maxName, len(rest) == 0
	case "labels", "namespaceLabels":
		switch {
		case len(rest) == 0:
			return maxLabels, true
		case rest[0] == "@keys":
			return maxLabelKey, true
		default: // a value, by field, index or "@values"
			return maxLabelValue, true
		}
	case "routes", "readyRouters", "utilization", "loadKnown", "requestsPerSecond", "capacity":
		// Numbers and a boolean: no size (CEL, seeing a dyn, would price shard.routes + 1 as a
		// string's concatenation of unknown length).
		return 0, len(rest) == 0
	case "hosts":
		if len(rest) == 0 {
			return maxHosts, true
		}
		return maxName, true
	}
	return 0, false
}
