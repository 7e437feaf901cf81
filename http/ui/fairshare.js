// fairshare.js: the sshare-style association tree and a bar chart of shares against usage.
import { get } from './api.js';
import { h, table, section, num, when } from './dom.js';
import { hbarChart } from './charts.js';

export async function render() {
  const fs = await get('/fairshare');
  const rows = fs.associations || [];
  const name = (a) => (a.user ? `${a.account} / ${a.user}` : a.account);
  const cols = [
    ['account', (a) => h('span', { class: `depth-${Math.min(a.depth, 6)}` }, a.account)], ['user', (a) => a.user || ''],
    ['raw shares', (a) => num(a.raw_shares), 'num'], ['norm shares', (a) => num(a.norm_shares, 4), 'num'],
    ['raw usage', (a) => num(a.raw_usage, 1), 'num'], ['effective usage', (a) => num(a.effective_usage, 4), 'num'],
    ['level FS', (a) => num(a.level_fs, 4), 'num'], ['fair share', (a) => num(a.fair_share, 4), 'num'],
    ['in use', (a) => num(a.fair_share_in_use, 4), 'num'],
  ];
  const chart = hbarChart(rows.map((a) => ({ label: name(a), values: [a.norm_shares, a.effective_usage, a.fair_share ?? NaN] })),
    ['norm shares', 'effective usage', 'fair share'], { label: 'shares against usage', max: 1 });
  return h('div', null,
    section('Fair share', h('p', { class: 'note' }, `policy ${fs.policy || '—'}, calculated ${when(fs.calculated_at)}`),
      table(cols, rows, { id: 'fairshare-table', empty: 'no accounts configured' })),
    section('Shares against usage', chart));
}
