import { sendJson } from './fake-http.js';
import { errorBody, type FakeApiRequest, type FakeSaasData } from './fake-saas-data.js';

/** GitHub's REST API: issue search, the user's repositories (Link-header pages), issues and comments. */
export function githubApi({
  req,
  res,
  url,
  path,
  route,
  q,
  parsed,
  data,
}: FakeApiRequest): boolean {
  if (route === 'GET /search/issues') {
    const terms = (q.get('q') ?? '')
      .toLowerCase()
      .split(/\s+/)
      .filter((t) => !t.includes(':'));
    const items = data.issues.filter((i) =>
      terms.every((t) => `${i.title} ${i.body}`.toLowerCase().includes(t)),
    );
    return sendJson(res, 200, {
      total_count: items.length,
      incomplete_results: false,
      items: items.map((i) => ghIssue(i)),
    });
  }
  if (route === 'GET /user/repos') {
    const perPage = Math.min(100, Number(q.get('per_page') ?? 30));
    const number = Math.max(1, Number(q.get('page') ?? 1));
    const last = Math.max(1, Math.ceil(data.repos.length / perPage));
    const headers: Record<string, string> = {};
    if (number < last) {
      // GitHub's pagination: a Link header with the next and last pages' URLs.
      const at = (n: number) => {
        const next = new URL(url.href);
        next.searchParams.set('page', String(n));
        return `<https://api.github.com/user/repos${next.search}>`;
      };
      headers.link = `${at(number + 1)}; rel="next", ${at(last)}; rel="last"`;
    }
    return sendJson(
      res,
      200,
      data.repos.slice((number - 1) * perPage, number * perPage).map((r) => ({
        ...r,
        html_url: `https://github.com/${r.full_name}`,
      })),
      headers,
    );
  }
  let m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)$/.exec(path);
  if (m && req.method === 'GET') {
    const issue = data.issues.find((i) => i.repo === m![1] && i.number === Number(m![2]));
    return issue
      ? sendJson(res, 200, ghIssue(issue))
      : sendJson(res, 404, errorBody('github', 404, 'Not Found'));
  }
  m = /^\/repos\/([^/]+\/[^/]+)\/issues$/.exec(path);
  if (m && req.method === 'POST') {
    const issue = {
      repo: m[1]!,
      number: data.issues.length + 100,
      title: String(parsed.title),
      body: String(parsed.body ?? ''),
      state: 'open',
      comments: [],
    };
    data.issues.push(issue);
    return sendJson(res, 201, ghIssue(issue));
  }
  m = /^\/repos\/([^/]+\/[^/]+)\/issues\/(\d+)\/comments$/.exec(path);
  if (m && req.method === 'POST') {
    const issue = data.issues.find((i) => i.repo === m![1] && i.number === Number(m![2]));
    if (!issue) return sendJson(res, 404, errorBody('github', 404, 'Not Found'));
    issue.comments.push(String(parsed.body));
    return sendJson(res, 201, {
      id: issue.comments.length,
      html_url: `https://github.com/${issue.repo}/issues/${issue.number}#issuecomment-${issue.comments.length}`,
    });
  }
  return false;
}

function ghIssue(i: FakeSaasData['issues'][number]) {
  return {
    number: i.number,
    title: i.title,
    state: i.state,
    body: i.body,
    comments: i.comments.length,
    html_url: `https://github.com/${i.repo}/issues/${i.number}`,
    repository_url: `https://api.github.com/repos/${i.repo}`,
    user: { login: 'ana' },
  };
}
