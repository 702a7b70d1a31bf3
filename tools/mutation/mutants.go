package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Operator is a class of mutation. The names follow gremlins' where the
// operator is one of its own, so a reader who knows that tool knows these.
type Operator string

// The operators. Gremlins' defaults (boundary, negation, arithmetic,
// increment, negatives) plus the ones that model the mistakes a protocol
// state machine invites: a flipped && or ||, a dropped !, a flipped
// boolean literal, a statement (a call or an assignment) left out, a
// break that should have been a continue.
const (
	CondBoundary    Operator = "CONDITIONALS_BOUNDARY"
	CondNegation    Operator = "CONDITIONALS_NEGATION"
	InvertLogical   Operator = "INVERT_LOGICAL"
	RemoveNot       Operator = "REMOVE_NOT"
	InvertNegatives Operator = "INVERT_NEGATIVES"
	ArithmeticBase  Operator = "ARITHMETIC_BASE"
	IncDec          Operator = "INCREMENT_DECREMENT"
	InvertBool      Operator = "INVERT_BOOL_LITERAL"
	RemoveStatement Operator = "REMOVE_STATEMENT"
	InvertLoopCtrl  Operator = "INVERT_LOOPCTRL"
)

// Mutant is one change to one source file.
type Mutant struct {
	// Key names the mutant stably across unrelated edits of its file:
	// the file, the enclosing function, the operator, the original text
	// and the ordinal among mutants sharing all of those. Triage
	// decisions (triage.txt) refer to it.
	Key      string   `json:"key"`
	Package  string   `json:"package"` // "refserver" or "refclient"
	File     string   `json:"file"`    // relative to the repository root
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Func     string   `json:"func"`
	Operator Operator `json:"operator"`
	Original string   `json:"original"`
	Mutated  string   `json:"mutated"`
	// OutOfScope says why the mutant is not run, when it is not: it
	// changes a fault switch's own condition, or code only a fault
	// switch reaches. Such code is there to break the protocol on
	// purpose; a mutant of it says nothing about the suite.
	OutOfScope string `json:"out_of_scope,omitempty"`
	// FileHash is the hash of the file the mutant was made from: a
	// result recorded for another hash is stale.
	FileHash string `json:"file_hash"`

	start, end int    // byte offsets of the replaced text
	repl       string // what replaces it
}

// Apply returns src with the mutation made.
func (m Mutant) Apply(src []byte) []byte {
	out := make([]byte, 0, len(src)+len(m.repl))
	out = append(out, src[:m.start]...)
	out = append(out, m.repl...)
	return append(out, src[m.end:]...)
}

// protocolFiles are the files of a reference peer whose mutants are
// made: every non-test Go file but the fault switches' own.
func protocolFiles(root, pkgDir string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, pkgDir))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", pkgDir, err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "faults") {
			continue
		}
		// A file this platform does not build has no mutant the suite
		// could see.
		if ok, err := build.Default.MatchFile(filepath.Join(root, pkgDir), n); err != nil || !ok {
			continue
		}
		out = append(out, filepath.Join(pkgDir, n))
	}
	sort.Strings(out)
	return out, nil
}

// faultConst is how a fault switch is named where it is tested.
var faultConst = regexp.MustCompile(`^Fault[A-Z]`)

// fileMutants makes every mutant of one file of pkg.
func fileMutants(pkg *peerPackage, rel string) ([]Mutant, error) {
	src, err := os.ReadFile(filepath.Join(pkg.root, rel))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	f := pkg.files[rel]
	if f == nil {
		return nil, fmt.Errorf("%s is not a file of %s", rel, pkg.dir)
	}
	sum := sha256.Sum256(src)
	g := &generator{
		fset: pkg.fset, src: src, rel: rel, pkg: pkg.name,
		hash: hex.EncodeToString(sum[:8]), predicates: pkg.predicates,
		ordinals: map[string]int{},
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		g.fn = funcName(fd)
		g.dead = deadLocals(fd.Body, pkg.dead[fd])
		if pkg.deadFuncs[fd.Name.Name] {
			g.dead = []span{{fd.Pos(), fd.End(), "a function only fault-switch code calls"}}
		}
		g.walk(fd.Body)
	}
	return g.out, nil
}

// deadLocals adds to a function's fault-only spans the statements that
// define a local variable (name := ...) only such spans read: nack :=
// req.GetErrorDetail() != nil, read only in "nack && s.has(FaultX)", is
// fault-switch state too. A name defined twice or shadowed counts every
// use of either, which only keeps more code in scope.
func deadLocals(body *ast.BlockStmt, dead []span) []span {
	in := func(p token.Pos) bool {
		for _, s := range dead {
			if p >= s.from && p < s.to {
				return true
			}
		}
		return false
	}
	defs := map[string][]*ast.AssignStmt{}
	defIdents := map[*ast.Ident]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && a.Tok == token.DEFINE && len(a.Lhs) == 1 {
			if id, ok := a.Lhs[0].(*ast.Ident); ok && id.Name != "_" {
				defs[id.Name] = append(defs[id.Name], a)
				defIdents[id] = true
			}
		}
		return true
	})
	for changed := true; changed; {
		changed = false
		for name, as := range defs {
			if as == nil || in(as[0].Pos()) {
				continue
			}
			used, live := false, false
			ast.Inspect(body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name == name && !defIdents[id] {
					used = true
					if !in(id.Pos()) {
						live = true
					}
				}
				return !live
			})
			if used && !live {
				for _, a := range as {
					dead = append(dead, span{a.Pos(), a.End(), "a value only fault-switch code reads"})
				}
				defs[name] = nil
				changed = true
			}
		}
	}
	return dead
}

// funcName is "Type.Method" or "Func".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

type span struct {
	from, to token.Pos
	why      string
}

type generator struct {
	fset       *token.FileSet
	src        []byte
	rel, pkg   string
	hash       string
	fn         string
	predicates map[string]bool
	dead       []span
	ordinals   map[string]int
	out        []Mutant
}

// isFaultCall says whether e reports a fault switch: a call taking a
// Fault constant (s.has(FaultX), c.fault(FaultX)) or a call of a function
// that does nothing but report fault switches.
func (g *generator) isFaultCall(e ast.Expr) bool {
	call, ok := unparen(e).(*ast.CallExpr)
	if !ok {
		return false
	}
	for _, a := range call.Args {
		if id, ok := unparen(a).(*ast.Ident); ok && faultConst.MatchString(id.Name) {
			return true
		}
	}
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return g.predicates[fn.Name]
	case *ast.SelectorExpr:
		return g.predicates[fn.Sel.Name]
	}
	return false
}

func unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// conjuncts flattens an && chain.
func conjuncts(e ast.Expr) []ast.Expr {
	e = unparen(e)
	if b, ok := e.(*ast.BinaryExpr); ok && b.Op == token.LAND {
		return append(conjuncts(b.X), conjuncts(b.Y)...)
	}
	return []ast.Expr{e}
}

// onlyWithFault says whether e can be true only with a fault switch on:
// an && chain one of whose terms is a fault call (not negated).
func (g *generator) onlyWithFault(e ast.Expr) bool {
	for _, c := range conjuncts(e) {
		if g.isFaultCall(c) {
			return true
		}
		if b, ok := unparen(c).(*ast.BinaryExpr); ok && b.Op == token.LOR && g.onlyWithFault(b.X) && g.onlyWithFault(b.Y) {
			return true
		}
	}
	return false
}

// isNotFault says whether e is !faultCall.
func (g *generator) isNotFault(e ast.Expr) bool {
	u, ok := unparen(e).(*ast.UnaryExpr)
	return ok && u.Op == token.NOT && g.isFaultCall(u.X)
}

// deadRanges finds the code of body only a fault switch reaches: the
// branch an if or a case takes only with a fault on, the other branch of
// an if whose condition is only "no fault", and an && chain that is
// false without a fault wherever it stands.
func (g *generator) deadRanges(body *ast.BlockStmt) []span {
	var out []span
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.IfStmt:
			if mentionsHooks(n.Init) || mentionsHooks(n.Cond) {
				out = append(out, span{n.Pos(), n.End(), "a test hook (set by tests only)"})
				return false
			}
			if g.onlyWithFault(n.Cond) {
				out = append(out, span{n.Cond.Pos(), n.Body.End(), "a branch taken only with a fault switch on"})
			} else if g.isNotFault(n.Cond) && n.Else != nil {
				out = append(out, span{n.Else.Pos(), n.Else.End(), "the branch taken only with a fault switch on"})
			}
		case *ast.CaseClause:
			if len(n.List) == 1 && g.onlyWithFault(n.List[0]) {
				out = append(out, span{n.Pos(), n.End(), "a case taken only with a fault switch on"})
			}
		case *ast.BinaryExpr:
			if n.Op == token.LAND && g.onlyWithFault(n) {
				out = append(out, span{n.Pos(), n.End(), "a condition true only with a fault switch on"})
				return false
			}
		}
		return true
	})
	return out
}

// mentionsHooks says whether n reads the peer's test hooks (s.hooks.x):
// callbacks only tests set.
func mentionsHooks(n ast.Node) bool {
	found := false
	if n == nil {
		return false
	}
	ast.Inspect(n, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "hooks" {
			found = true
		}
		return !found
	})
	return found
}

func (g *generator) deadWhy(p token.Pos) string {
	for _, s := range g.dead {
		if p >= s.from && p < s.to {
			return s.why
		}
	}
	return ""
}

// add records a mutant replacing src[from:to] by repl.
func (g *generator) add(op Operator, node ast.Node, from, to token.Pos, repl, outOfScope string) {
	start, end := g.fset.Position(from).Offset, g.fset.Position(to).Offset
	orig := g.text(node)
	if outOfScope == "" {
		outOfScope = g.deadWhy(from)
	}
	mutated := string(g.src[g.fset.Position(node.Pos()).Offset:start]) + repl + string(g.src[end:g.fset.Position(node.End()).Offset])
	id := fmt.Sprintf("%s:%s:%s:%s@%s", g.rel, g.fn, op, short(orig), g.context(from))
	g.ordinals[id]++
	p := g.fset.Position(from)
	g.out = append(g.out, Mutant{
		Key:     fmt.Sprintf("%s#%d", id, g.ordinals[id]),
		Package: g.pkg, File: g.rel, Line: p.Line, Col: p.Column, Func: g.fn,
		Operator: op, Original: short(orig), Mutated: short(mutated),
		OutOfScope: outOfScope, FileHash: g.hash,
		start: start, end: end, repl: repl,
	})
}

// context fingerprints the three lines around p: with it a key tells
// apart the same change on the same text at two places of a function,
// and keeps naming the same place when code is added elsewhere (an
// ordinal alone would shift); an edit next to it makes a new key, whose
// triage must then be read again.
func (g *generator) context(p token.Pos) string {
	line := g.fset.Position(p).Line
	lines := bytes.Split(g.src, []byte("\n"))
	h := sha256.New()
	for l := line - 2; l <= line; l++ {
		if l >= 1 && l <= len(lines) {
			h.Write(bytes.TrimSpace(lines[l-1]))
			h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:3])
}

func (g *generator) text(n ast.Node) string {
	return string(g.src[g.fset.Position(n.Pos()).Offset:g.fset.Position(n.End()).Offset])
}

// short is one line of at most 80 characters.
func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

var (
	boundary = map[token.Token]string{token.LSS: "<=", token.LEQ: "<", token.GTR: ">=", token.GEQ: ">"}
	negation = map[token.Token]string{token.EQL: "!=", token.NEQ: "==", token.LSS: ">=", token.GEQ: "<", token.GTR: "<=", token.LEQ: ">"}
	logical  = map[token.Token]string{token.LAND: "||", token.LOR: "&&"}
	arith    = map[token.Token]string{token.ADD: "-", token.SUB: "+", token.MUL: "/", token.QUO: "*", token.REM: "*"}
)

func (g *generator) walk(body *ast.BlockStmt) {
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			g.binary(n)
		case *ast.UnaryExpr:
			g.unary(n)
		case *ast.IncDecStmt:
			repl := "--"
			if n.Tok == token.DEC {
				repl = "++"
			}
			g.add(IncDec, n, n.TokPos, n.TokPos+2, repl, "")
		case *ast.Ident:
			if n.Name == "true" || n.Name == "false" {
				repl := "true"
				if n.Name == "true" {
					repl = "false"
				}
				g.add(InvertBool, n, n.Pos(), n.End(), repl, "")
			}
		case *ast.BlockStmt:
			g.statements(n.List)
		case *ast.CaseClause:
			g.statements(n.Body)
		case *ast.CommClause:
			g.statements(n.Body)
		case *ast.BranchStmt:
			switch n.Tok {
			case token.BREAK:
				if n.Label == nil {
					g.add(InvertLoopCtrl, n, n.Pos(), n.End(), "continue", "")
				}
			case token.CONTINUE:
				if n.Label == nil {
					g.add(InvertLoopCtrl, n, n.Pos(), n.End(), "break", "")
				}
			}
		case *ast.FuncLit:
			return true
		}
		return true
	})
}

func (g *generator) binary(b *ast.BinaryExpr) {
	// An operator one of whose operands is a fault switch's report is
	// the fault switch's own condition.
	scope := ""
	if g.isFaultCall(b.X) || g.isFaultCall(b.Y) || g.isNotFault(b.X) || g.isNotFault(b.Y) {
		scope = "a fault switch's own condition"
	}
	opEnd := b.OpPos + token.Pos(len(b.Op.String()))
	if r, ok := boundary[b.Op]; ok {
		g.add(CondBoundary, b, b.OpPos, opEnd, r, scope)
	}
	if r, ok := negation[b.Op]; ok {
		g.add(CondNegation, b, b.OpPos, opEnd, r, scope)
	}
	if r, ok := logical[b.Op]; ok {
		g.add(InvertLogical, b, b.OpPos, opEnd, r, scope)
	}
	if r, ok := arith[b.Op]; ok && !isStringy(b) {
		g.add(ArithmeticBase, b, b.OpPos, opEnd, r, scope)
	}
}

// isStringy says whether b is plainly a string concatenation, whose
// "mutant" would not compile.
func isStringy(b *ast.BinaryExpr) bool {
	if b.Op != token.ADD {
		return false
	}
	for _, e := range []ast.Expr{b.X, b.Y} {
		switch e := unparen(e).(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING || e.Kind == token.CHAR {
				return true
			}
		case *ast.BinaryExpr:
			if isStringy(e) {
				return true
			}
		case *ast.CallExpr:
			if s, ok := e.Fun.(*ast.SelectorExpr); ok {
				if id, ok := s.X.(*ast.Ident); ok && (id.Name == "fmt" || id.Name == "strings" || id.Name == "strconv") {
					return true
				}
			}
		}
	}
	return false
}

func (g *generator) unary(u *ast.UnaryExpr) {
	switch u.Op {
	case token.NOT:
		scope := ""
		if g.isFaultCall(u.X) {
			scope = "a fault switch's own condition"
		}
		g.add(RemoveNot, u, u.OpPos, u.OpPos+1, "", scope)
	case token.SUB:
		g.add(InvertNegatives, u, u.OpPos, u.OpPos+1, "", "")
	}
}

// statements makes the statement-removal mutants of a statement list:
// a call whose result is dropped, an assignment to something that
// already exists. A removed declaration would only fail to compile.
func (g *generator) statements(list []ast.Stmt) {
	for _, s := range list {
		switch s := s.(type) {
		case *ast.ExprStmt:
			if _, ok := s.X.(*ast.CallExpr); ok && !isPanic(s.X) {
				g.add(RemoveStatement, s, s.Pos(), s.End(), "", g.stmtScope(s))
			}
		case *ast.AssignStmt:
			if s.Tok != token.DEFINE {
				g.add(RemoveStatement, s, s.Pos(), s.End(), "", g.stmtScope(s))
			}
		}
	}
}

// syncCalls are the calls whose removal changes synchronisation, not the
// protocol: a missing Lock is a data race no scenario can provoke on
// purpose, a missing Unlock a deadlock; neither is the kind of mistake
// the suites are there to find.
var syncCalls = map[string]bool{"Lock": true, "Unlock": true, "RLock": true, "RUnlock": true, "Add": true, "Done": true, "Wait": true}

// stmtScope says why removing s is out of scope, if it is: a
// synchronisation call, or a statement that records a fault switch's
// state (ts.stalled = nack && c.s.has(FaultX)).
func (g *generator) stmtScope(s ast.Stmt) string {
	if e, ok := s.(*ast.ExprStmt); ok {
		if sel, ok := e.X.(*ast.CallExpr).Fun.(*ast.SelectorExpr); ok && syncCalls[sel.Sel.Name] {
			if _, isPkg := sel.X.(*ast.Ident); !isPkg || sel.Sel.Name != "Add" {
				return "synchronisation, not protocol"
			}
		}
	}
	faulty := false
	ast.Inspect(s, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && g.isFaultCall(e) {
			faulty = true
		}
		// The set of switches itself (s.faults[f] = true).
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "faults" {
			faulty = true
		}
		return !faulty
	})
	if faulty {
		return "a fault switch's own state"
	}
	return ""
}

func isPanic(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := c.Fun.(*ast.Ident)
	return ok && id.Name == "panic"
}

// Peers are the packages mutated, with the suite that is their oracle.
var Peers = []struct {
	Package, Dir string
}{
	{"refserver", "peers/refserver"},
	{"refclient", "peers/refclient"},
}

// AllMutants makes every mutant of every protocol file of the reference
// peers, in a stable order.
func AllMutants(root string) ([]Mutant, error) {
	var out []Mutant
	for _, p := range Peers {
		pkg, err := loadPackage(root, p.Dir, p.Package)
		if err != nil {
			return nil, err
		}
		files, err := protocolFiles(root, p.Dir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			ms, err := fileMutants(pkg, f)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	return out, nil
}

// peerPackage is a reference peer's package, parsed, with what the scope
// rules need to know of it as a whole.
type peerPackage struct {
	root, dir, name string
	fset            *token.FileSet
	files           map[string]*ast.File // every non-test file, by path relative to root
	// predicates are the functions that do nothing but report fault
	// switches (func (s *Server) firstNameOnly(t) bool { return
	// s.has(FaultX) || ... }): a call of one is a fault switch's report.
	predicates map[string]bool
	// dead are each function's spans only a fault switch reaches.
	dead map[*ast.FuncDecl][]span
	// deadFuncs are the unexported functions only such spans, the
	// fault switches' own files or other such functions call.
	deadFuncs map[string]bool
}

func loadPackage(root, dir, name string) (*peerPackage, error) {
	entries, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	pkg := &peerPackage{root: root, dir: dir, name: name, fset: token.NewFileSet(),
		files: map[string]*ast.File{}, predicates: map[string]bool{}, dead: map[*ast.FuncDecl][]span{}, deadFuncs: map[string]bool{}}
	var funcs []*ast.FuncDecl
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if ok, err := build.Default.MatchFile(filepath.Join(root, dir), n); err != nil || !ok {
			continue
		}
		rel := filepath.Join(dir, n)
		f, err := parser.ParseFile(pkg.fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", rel, err)
		}
		pkg.files[rel] = f
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				funcs = append(funcs, fd)
			}
		}
	}
	g := &generator{predicates: pkg.predicates}
	for changed := true; changed; {
		changed = false
		for _, fd := range funcs {
			if len(fd.Body.List) != 1 || pkg.predicates[fd.Name.Name] || fd.Name.Name == "has" || fd.Name.Name == "fault" {
				continue
			}
			if r, ok := fd.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 && g.onlyWithFault(r.Results[0]) {
				pkg.predicates[fd.Name.Name] = true
				changed = true
			}
		}
	}
	for _, fd := range funcs {
		pkg.dead[fd] = g.deadRanges(fd.Body)
	}
	pkg.findDeadFuncs(funcs)
	return pkg, nil
}

// findDeadFuncs marks the unexported functions every use of which (a
// call or a function value, by name: two methods of one name count as
// one) is in code only a fault switch reaches, in a fault switch's own
// file, or in another such function. Exported ones are other packages'
// to call.
func (pkg *peerPackage) findDeadFuncs(funcs []*ast.FuncDecl) {
	type use struct {
		in   *ast.FuncDecl // nil: outside any function
		pos  token.Pos
		file string
	}
	uses := map[string][]use{}
	for rel, f := range pkg.files {
		for _, d := range f.Decls {
			fd, _ := d.(*ast.FuncDecl)
			var body ast.Node = d
			if fd != nil {
				if fd.Body == nil {
					continue
				}
				body = fd.Body
			}
			// Every identifier of the name is a use: a call, a method
			// value, a function passed as a value. A variable of the
			// same name only makes the function look more alive.
			ast.Inspect(body, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					uses[id.Name] = append(uses[id.Name], use{fd, id.Pos(), rel})
				}
				return true
			})
		}
	}
	inSpan := func(fd *ast.FuncDecl, p token.Pos) bool {
		for _, s := range pkg.dead[fd] {
			if p >= s.from && p < s.to {
				return true
			}
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		for _, fd := range funcs {
			name := fd.Name.Name
			if pkg.deadFuncs[name] || ast.IsExported(name) || name == "init" || name == "main" || len(uses[name]) == 0 {
				continue
			}
			dead := true
			for _, u := range uses[name] {
				faultFile := strings.HasPrefix(filepath.Base(u.file), "faults")
				if !faultFile && (u.in == nil || !(inSpan(u.in, u.pos) || pkg.deadFuncs[u.in.Name.Name])) {
					dead = false
					break
				}
			}
			if dead {
				pkg.deadFuncs[name] = true
				changed = true
			}
		}
	}
}
