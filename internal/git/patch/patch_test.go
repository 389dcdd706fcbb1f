package patch

import (
	"reflect"
	"testing"
)

func TestParseChangedLines(t *testing.T) {
	patch := `diff --git a/a.txt b/a.txt
index 1..2 100644
--- a/a.txt
+++ b/a.txt
@@ -3 +3 @@ x
-two
+TWO
@@ -7,0 +8,2 @@ y
+new
+new
@@ -10,3 +11,0 @@
-gone
diff --git "a/sp\303\251cial \"q\".txt" "b/sp\303\251cial \"q\".txt"
new file mode 100644
--- /dev/null
+++ "b/sp\303\251cial \"q\".txt"
@@ -0,0 +1 @@
+hello
diff --git a/with space b/with space
Binary files a/with space and b/with space differ
`
	got, err := Parse([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	// each hunk's new lines, by digest: a deletion's none
	want := []File{
		{Path: "a.txt", Spans: [][2]int{{3, 3}, {8, 7}, {10, 12}}, Hunks: []string{HunkDigest([]string{"TWO"}), HunkDigest([]string{"new", "new"}), HunkDigest(nil)}},
		{Path: "spécial \"q\".txt", Spans: [][2]int{{1, 0}}, Hunks: []string{HunkDigest([]string{"hello"})}},
		{Path: "with space"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
	for _, bad := range []string{"diff --git a/x b/y\n", "diff --git a/x b/x\n@@ -z +1 @@\n"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
