package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/geoidem/geoidem/internal/testkit"
	"github.com/jackc/pgx/v5"
)

// ingestStore is one store the service can run on, with what a test needs
// to look into PostGIS.
type ingestStore struct {
	name          string
	args          []string
	featuresTable string // PostgreSQL only
}

// ingestStores are memory, Redis and PostgreSQL, each with its own key
// prefix or tables.
func ingestStores(t *testing.T) []ingestStore {
	suffix := strconv.FormatUint(rand.Uint64(), 36)
	keys, features := "corpus_keys_"+suffix, "corpus_features_"+suffix
	t.Cleanup(func() { dropTables(t, keys, features) })
	dropRedisPrefix(t, "geoidem-corpus-"+suffix+":")
	return []ingestStore{
		{name: "memory", args: []string{"-store", "memory"}},
		{name: "redis", args: []string{"-store", testkit.SharedURL(), "-redis-prefix", "geoidem-corpus-" + suffix + ":", "-redis-volatile"}},
		{name: "postgres", args: []string{"-store", postgresURL(), "-pg-key-table", keys, "-pg-features-table", features}, featuresTable: features},
	}
}

// corpusDoc is one valid document and what each of its features must look
// like once stored: its id, its bytes as posted, and the number of
// dimensions PostGIS must give its geometry (0: null geometry, -1: empty).
type corpusDoc struct {
	name  string
	body  string
	ids   []string
	raws  []string
	ndims []int
}

func feat(id, geometry, props string) string {
	return `{"type":"Feature","id":` + id + `,"geometry":` + geometry + `,"properties":` + props + `}`
}

func geomOf(typ, coords string) string {
	return `{"type":"` + typ + `","coordinates":` + coords + `}`
}

// ring3 is a closed square ring with Z.
const ring3 = `[[0,0,1],[4,0,2],[4,4,3],[0,4,4],[0,0,1]]`

// circleZ is a polygon of n vertices with an altitude on each.
func circleZ(n int) string {
	var b strings.Builder
	b.WriteString("[[")
	for i := 0; i <= n; i++ {
		k := i % n
		a := 2 * math.Pi * float64(k) / float64(n)
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "[%s,%s,%d]", strconv.FormatFloat(10+math.Cos(a), 'f', 9, 64), strconv.FormatFloat(50+math.Sin(a), 'f', 9, 64), k)
	}
	b.WriteString("]]")
	return b.String()
}

func corpus() []corpusDoc {
	one := func(name, id, geometry, props string, ndims int) corpusDoc {
		idText := id
		if s, err := strconv.Unquote(id); err == nil {
			idText = s
		}
		body := feat(id, geometry, props)
		return corpusDoc{name: name, body: body, ids: []string{idText}, raws: []string{body}, ndims: []int{ndims}}
	}
	docs := []corpusDoc{
		one("point z", `"c-point-z"`, geomOf("Point", `[13.4,52.5,34.25]`), `{}`, 3),
		one("linestring z", `"c-line-z"`, geomOf("LineString", `[[0,0,1],[1,1,-2.5]]`), `{}`, 3),
		one("polygon z", `"c-poly-z"`, geomOf("Polygon", "["+ring3+"]"), `{}`, 3),
		one("multipoint z", `"c-mpoint-z"`, geomOf("MultiPoint", `[[0,0,1],[1,1,2]]`), `{}`, 3),
		one("multilinestring z", `"c-mline-z"`, geomOf("MultiLineString", `[[[0,0,1],[1,1,2]],[[2,2,3],[3,3,4]]]`), `{}`, 3),
		one("multipolygon z", `"c-mpoly-z"`, geomOf("MultiPolygon", `[[`+ring3+`],[[[10,10,5],[11,10,5],[11,11,5],[10,10,5]]]]`), `{}`, 3),
		one("geometrycollection z", `"c-gc-z"`, `{"type":"GeometryCollection","geometries":[`+geomOf("Point", `[1,2,3]`)+`,`+geomOf("LineString", `[[0,0,1],[1,1,2]]`)+`]}`, `{}`, 3),
		one("geometrycollection 2d and 3d", `"c-gc-mixed"`, `{"type":"GeometryCollection","geometries":[`+geomOf("Point", `[1,2]`)+`,`+geomOf("Point", `[1,2,3]`)+`]}`, `{}`, 3),
		one("point 2d", `"c-point-2d"`, geomOf("Point", `[2.35,48.85]`), `null`, 2),
		one("NUL in properties", `"c-nul"`, geomOf("Point", `[1,2]`), `{"s":"a\u0000b"}`, 2),
		one("unicode and surrogate pairs", `"c-unicode"`, geomOf("Point", `[1,2]`), `{"s":"Zürich 東京 \ud83d\ude00 😀","k\u00e9y":"\u00e9"}`, 2),
		one("1e308", `"c-big"`, geomOf("Point", `[1,2]`), `{"n":1e308,"m":-1.7976931348623157e308,"tiny":5e-324}`, 2),
		one("numeric id", `42`, geomOf("Point", `[1,2,3]`), `{"n":1}`, 3),
		one("numeric id with fraction", `12.50`, geomOf("Point", `[1,2]`), `{}`, 2),
		one("nested properties", `"c-nested"`, geomOf("Point", `[1,2]`), `{"a":{"b":{"c":[1,{"d":[true,false,null]}]}},"e":[]}`, 2),
		one("2,000-vertex polygon with Z", `"c-circle-z"`, geomOf("Polygon", circleZ(2000)), `{"name":"circle"}`, 3),
		one("null geometry", `"c-null"`, `null`, `{"x":1}`, 0),
		one("empty coordinates", `"c-empty"`, geomOf("MultiPolygon", `[]`), `{}`, -1),
		one("empty point", `"c-empty-point"`, geomOf("Point", `[]`), `{}`, -1),
		{name: "bbox and foreign members", body: bboxFeature, ids: []string{"c-bbox"}, raws: []string{bboxFeature}, ndims: []int{2}},
		{name: "feature collection mixing 2D and 3D", body: `{"type":"FeatureCollection","bbox":[-10,-10,10,10],"features":[` + fc2d + `, ` + fc3d + `],"Type":"Feature"}`,
			ids: []string{"c-fc-2d", "c-fc-3d"}, raws: []string{fc2d, fc3d}, ndims: []int{2, 3}},
	}
	big := corpusDoc{name: "200-feature collection"}
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		id := "c-many-" + strconv.Itoa(i)
		f := feat(strconv.Quote(id), geomOf("Point", fmt.Sprintf("[%d.5,%d.25,%d]", i%180, i%90, i)), fmt.Sprintf(`{"i":%d}`, i))
		b.WriteString(f)
		big.ids = append(big.ids, id)
		big.raws = append(big.raws, f)
		big.ndims = append(big.ndims, 3)
	}
	b.WriteString("]}")
	big.body = b.String()
	return append(docs, big)
}

const (
	bboxFeature = `{"type":"Feature","id":"c-bbox","bbox":[0,0,4,4],"geometry":{"type":"Polygon","bbox":[0,0,4,4],"coordinates":[[[0,0],[4,0],[4,4],[0,4],[0,0]]],"foreign":{"x":[1]}},"properties":{"p":1},"ID":"spoof","title":"t"}`
	fc2d        = `{"type":"Feature","id":"c-fc-2d","geometry":{"type":"Point","coordinates":[1,2]},"properties":{}}`
	fc3d        = "{ \"type\" : \"Feature\",\n \"id\":\"c-fc-3d\", \"geometry\":{\"type\":\"LineString\",\"coordinates\":[[0,0,5],[1,1,6]]},\"properties\":{} }"
)

// TestIngestCorpus posts every valid document of the corpus to the service
// on every store: each is 201, its retry is a replay, and GET returns each
// feature exactly as posted (geometry with Z, properties, escapes); in
// PostGIS each geometry has the dimensions it was sent with.
func TestIngestCorpus(t *testing.T) {
	for _, st := range ingestStores(t) {
		t.Run(st.name, func(t *testing.T) {
			url := start(t, st.args...)
			var conn *pgx.Conn
			if st.featuresTable != "" {
				var err error
				if conn, err = pgx.Connect(context.Background(), postgresURL()); err != nil {
					t.Fatal(err)
				}
				defer conn.Close(context.Background())
			}
			for i, c := range corpus() {
				key := "corpus-" + strconv.Itoa(i)
				resp, body := do(t, http.MethodPost, url+"/features", key, c.body)
				if resp.StatusCode != http.StatusCreated {
					t.Errorf("%s: %d %s, want 201", c.name, resp.StatusCode, body)
					continue
				}
				var stored struct{ Stored []string }
				if err := json.Unmarshal([]byte(body), &stored); err != nil || strings.Join(stored.Stored, ",") != strings.Join(c.ids, ",") {
					t.Errorf("%s: answered %s, want stored %q", c.name, body, c.ids)
				}
				again, body2 := do(t, http.MethodPost, url+"/features", key, c.body)
				if again.StatusCode != http.StatusCreated || body2 != body || again.Header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("%s: retry %d %s replayed=%q, want the replay", c.name, again.StatusCode, body2, again.Header.Get("Idempotent-Replayed"))
				}
				for k, raw := range c.raws {
					id := c.ids[k]
					r, got := do(t, http.MethodGet, url+"/features/"+id, "", "")
					if r.StatusCode != http.StatusOK || got != raw {
						t.Errorf("%s: GET /features/%s: %d\n got %.300s\nwant %.300s", c.name, id, r.StatusCode, got, raw)
					}
					if conn != nil {
						checkPostGIS(t, conn, st.featuresTable, c.name, id, c.ndims[k])
					}
				}
			}
		})
	}
}

// checkPostGIS checks the stored geometry's dimensions: 2 or 3, NULL for a
// null geometry (0), empty for empty coordinates (-1).
func checkPostGIS(t *testing.T, conn *pgx.Conn, table, name, id string, ndims int) {
	t.Helper()
	var dims *int
	var empty *bool
	var srid *int
	err := conn.QueryRow(context.Background(), `SELECT ST_NDims(geom), ST_IsEmpty(geom), ST_SRID(geom) FROM `+table+` WHERE id = $1`, id).Scan(&dims, &empty, &srid)
	if err != nil {
		t.Errorf("%s: PostGIS row %s: %v", name, id, err)
		return
	}
	switch {
	case ndims == 0:
		if dims != nil {
			t.Errorf("%s: null geometry stored with %d dimensions", name, *dims)
		}
	case ndims == -1:
		if empty == nil || !*empty {
			t.Errorf("%s: empty geometry stored as non-empty (%v)", name, empty)
		}
	case dims == nil || *dims != ndims || srid == nil || *srid != 4326:
		t.Errorf("%s: ST_NDims %v, SRID %v; want %d, 4326", name, deref(dims), deref(srid), ndims)
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// Member names are case-sensitive: "ID" is a foreign member, never the id,
// and a foreign "Type" never changes what a FeatureCollection is.
func TestIngestCaseSensitiveID(t *testing.T) {
	url := start(t)
	spoof := `{"type":"Feature","id":"real","ID":"spoof","geometry":{"type":"Point","coordinates":[1,2]},"properties":null}`
	if r, b := do(t, http.MethodPost, url+"/features", "k1", spoof); r.StatusCode != http.StatusCreated || b != `{"stored":["real"]}` {
		t.Fatalf("POST: %d %s, want 201 stored [real]", r.StatusCode, b)
	}
	if r, _ := do(t, http.MethodGet, url+"/features/real", "", ""); r.StatusCode != http.StatusOK {
		t.Errorf("GET /features/real: %d, want 200", r.StatusCode)
	}
	if r, _ := do(t, http.MethodGet, url+"/features/spoof", "", ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET /features/spoof: %d, want 404", r.StatusCode)
	}
	fc := `{"type":"FeatureCollection","Type":"Feature","features":[{"type":"Feature","id":"in-fc","geometry":null,"properties":null}]}`
	if r, b := do(t, http.MethodPost, url+"/features", "k2", fc); r.StatusCode != http.StatusCreated || b != `{"stored":["in-fc"]}` {
		t.Fatalf("FeatureCollection with a foreign \"Type\": %d %s, want 201 stored [in-fc]", r.StatusCode, b)
	}
}

// A wrong Content-Type is refused before the claim: the sender's corrected
// retry, same key and body, runs.
func TestIngestUnsupportedMediaTypeThenCorrectedRetry(t *testing.T) {
	url := start(t)
	body := `{"type":"Feature","id":"m1","geometry":null,"properties":null}`
	req, _ := http.NewRequest(http.MethodPost, url+"/features", strings.NewReader(body))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Idempotency-Key", "k415")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %d, want 415", resp.StatusCode)
	}
	r, b := do(t, http.MethodPost, url+"/features", "k415", body)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("corrected retry: %d replayed=%q %s; want 201, executed", r.StatusCode, r.Header.Get("Idempotent-Replayed"), b)
	}
}

// Every error the service writes has a project problem type, and the
// handler's own 422 keeps Cache-Control: no-store when replayed.
func TestIngestProblemTypes(t *testing.T) {
	url := start(t)
	noID := `{"type":"Feature","geometry":null,"properties":null}`
	bare := `{"type":"Point","coordinates":[1,2]}`
	for _, c := range []struct {
		method, path, key, body string
		status                  int
		typ                     string
	}{
		{http.MethodPost, "/features", "p1", noID, 422, "feature-id-missing"},
		{http.MethodPost, "/features", "p1", noID, 422, "feature-id-missing"}, // the replay
		{http.MethodPost, "/features", "p2", bare, 422, "not-features"},
		{http.MethodGet, "/features/nope", "", "", 404, "feature-not-found"},
	} {
		r, b := do(t, c.method, url+c.path, c.key, c.body)
		var p struct{ Type string }
		_ = json.Unmarshal([]byte(b), &p)
		if r.StatusCode != c.status || p.Type != "https://github.com/geoidem/geoidem/blob/main/docs/problems.md#"+c.typ ||
			r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d %s (Cache-Control %q); want %d of type %s, no-store", c.method, c.path, r.StatusCode, b, r.Header.Get("Cache-Control"), c.status, c.typ)
		}
	}
}
