# build.sh is sourced by bench scripts, from the repository root, after they
# set work (a temporary directory) and log: it sets lh to longhaul (LONGHAUL_BIN, else
# built into $work) and demo to the demo target (DEMO_BIN, else built), so
# that no soak or round spends its time compiling.
lh=${LONGHAUL_BIN:-}
if [[ -z "$lh" ]]; then
	log "building longhaul"
	go build -o "$work/longhaul" ./cmd/longhaul
	lh="$work/longhaul"
fi
demo=${DEMO_BIN:-}
if [[ -z "$demo" ]]; then
	log "building the demo target"
	CGO_ENABLED=0 go build -trimpath -o "$work/demo-target" ./examples/demo-target
	demo="$work/demo-target"
fi
