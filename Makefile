# The two commands: `make demo` (build and serve the demo) and `make test` (every test).
# Both install what a fresh machine lacks first (scripts/setup.sh).
.PHONY: demo test build bench size setup

demo:
	bash scripts/demo.sh

test:
	bash scripts/test.sh

setup:
	bash scripts/setup.sh

build: setup
	bash scripts/build.sh

bench: build
	cargo build --quiet --release -p llm-rum-demo -p llm-rum-collector
	node scripts/bench.js

size: build
	node scripts/size.js
