#!/bin/sh
# validate-callgrind.sh counts the instructions of one call of
# geojson.Validate and of encoding/json.Valid on each input of
# BenchmarkValidateVsJSONValid (testkit.ParseSpeedInputs), with
# valgrind's callgrind, counting inside each function only
# (--toggle-collect): (count over 2N calls - count over N calls) / N,
# which drops the first call's setup. Instruction counts do not vary with
# the machine's load, unlike times.
#
#	go test -c -o /tmp/geojson.test ./geojson
#	sh bench/validate-callgrind.sh /tmp/geojson.test
#
# INPUTS overrides the inputs and their N: 'Point_Feature:4000 zigzag_10k:8'.
# A run takes a few minutes; valgrind occasionally dies on a Go binary,
# and a run that printed no count is retried.
bin=${1:?usage: validate-callgrind.sh geojson.test}
count() { # symbol benchmark calls
	for try in 1 2 3 4 5; do
		c=$(GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOGC=off GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
			--toggle-collect="$1" "$bin" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x" 2>&1 |
			sed -n 's/.*Collected : //p')
		if [ -n "$c" ]; then
			echo "$c"
			return
		fi
	done
	echo "validate-callgrind.sh: no count for $2" >&2
	exit 1
}
echo "input Validate json.Valid ratio"
for in in ${INPUTS:-Point_Feature:4000 1,000_points:8 circle_100k:2 zigzag_10k:8 zigzag_100k:2}; do
	name=${in%%:*}
	n=${in##*:}
	line=$name
	for fn in Validate:github.com/geoidem/geoidem/geojson.Validate json.Valid:encoding/json.Valid; do
		sub=${fn%%:*}
		b="ValidateVsJSONValid/^${name}\$/^${sub}\$"
		c1=$(count "${fn#*:}" "$b" "$n") || exit 1
		c2=$(count "${fn#*:}" "$b" $((2 * n))) || exit 1
		per=$(((c2 - c1) / n))
		line="$line $per"
		eval "per_$(echo "$sub" | tr -d .)=$per"
	done
	echo "$line $(echo "scale=3; $per_jsonValid / $per_Validate" | bc)"
done
