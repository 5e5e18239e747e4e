// Files: stored file objects (GET /v1/files), upload, download and delete.
import { api, send } from "../api";
import { download, ErrorBox, fmtBytes, Table, useAction, useLoad, View } from "../ui";
import type { StoredFileList } from "../types";

export function FilesPage() {
  const files = useLoad((signal) => api<StoredFileList>("/v1/files?limit=200", { signal }), []);
  const [busy, error, run] = useAction();
  const upload = (e: Event) => {
    const input = e.currentTarget as HTMLInputElement;
    const file = input.files?.[0];
    if (!file) return;
    void run(async () => {
      const form = new FormData();
      form.append("purpose", "user_data");
      form.append("file", file, file.name);
      await send("/v1/files", { body: form });
      input.value = "";
      files.reload();
    });
  };
  return (
    <section>
      <h1>Files</h1>
      <label class="button">
        Upload a file <input type="file" class="visually-hidden" onChange={upload} disabled={busy} />
      </label>
      <ErrorBox error={error} />
      <View state={files} label="Loading files">
        {(d) => (
          <Table rows={d.data} head={["Name", "Size", "Purpose", "Created", "Expires", ""]} empty="No stored files.">
            {(f) => (
              <tr key={f.id}>
                <td>{f.filename}</td>
                <td>{fmtBytes(f.bytes)}</td>
                <td>{f.purpose}</td>
                <td>{new Date(f.created_at * 1000).toLocaleString()}</td>
                <td>{f.expires_at ? new Date(f.expires_at * 1000).toLocaleString() : "never"}</td>
                <td>
                  <button
                    type="button"
                    class="link"
                    onClick={() => void run(() => download(`/v1/files/${encodeURIComponent(f.id)}/content`, f.filename))}
                  >
                    Download
                  </button>{" "}
                  <button
                    type="button"
                    class="link danger"
                    onClick={() =>
                      void run(async () => {
                        await api(`/v1/files/${encodeURIComponent(f.id)}`, { method: "DELETE" });
                        files.reload();
                      })
                    }
                  >
                    Delete
                  </button>
                </td>
              </tr>
            )}
          </Table>
        )}
      </View>
    </section>
  );
}
